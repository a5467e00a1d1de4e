package io.mcctl.master.service;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

import io.mcctl.master.protocol.Placement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** A shard's table of in-flight allocations against a HashMap as the model, through growth, colliding keys and removals. */
@Timeout(60)
class KeyTableInFlightsTest {

    private static KeyTable.InFlight allocation(String scopedKey, int n) {
        return new KeyTable.InFlight(scopedKey, new Placement(0, n * 4096L, 1, 0), n, false, false);
    }

    @Test
    void random_adds_and_removes_keep_the_same_allocations_as_a_map_through_growth_and_colliding_chains() {
        KeyTable.InFlights table = new KeyTable.InFlights(0);
        Map<String, KeyTable.InFlight> model = new HashMap<>();
        List<String> keys = new ArrayList<>(MappingTableTest.collidingKeys(6)); // 64 keys in one chain
        for (int i = 0; i < 5_000; i++) {
            keys.add("tenant\0key-" + i);
        }
        Random random = new Random(7);
        for (int step = 0; step < 60_000; step++) {
            String key = new String(keys.get(random.nextInt(keys.size()))); // equal, never the same instance
            if (random.nextInt(3) == 0) {
                KeyTable.InFlight filed = model.remove(key);
                table.remove(allocation(key, step)); // another allocation of an equal key, never filed: takes nothing out
                assertSame(filed, table.get(key), key);
                if (filed != null) {
                    table.remove(filed);
                }
            } else if (!model.containsKey(key)) {
                KeyTable.InFlight pending = allocation(key, step);
                table.add(pending);
                model.put(key, pending);
            }
            assertEquals(model.size(), table.size());
            assertSame(model.get(key), table.get(key), key);
        }
        for (String key : keys) {
            assertSame(model.get(key), table.get(new String(key)), key);
        }
        Set<KeyTable.InFlight> iterated = new HashSet<>();
        for (KeyTable.InFlight pending : table) {
            assertSame(model.get(pending.scopedKey), pending, pending.scopedKey);
            iterated.add(pending);
        }
        assertEquals(model.size(), iterated.size(), "every allocation once");
    }

    @Test
    void removing_a_key_leaves_the_rest_of_its_chain_in_place() {
        KeyTable.InFlights table = new KeyTable.InFlights(4);
        List<String> keys = MappingTableTest.collidingKeys(3);
        for (int i = 0; i < keys.size(); i++) {
            table.add(allocation(keys.get(i), i));
        }
        table.remove(table.get(keys.get(3)));
        table.remove(table.get(new String(keys.get(0))));
        assertNull(table.get(keys.get(0)));
        assertNull(table.get(keys.get(3)));
        for (int i : new int[] {1, 2, 4, 5, 6, 7}) {
            assertEquals(i * 4096L, table.get(new String(keys.get(i))).placement.offset(), keys.get(i));
        }
        assertEquals(keys.size() - 2, table.size());
    }
}
