package io.mcctl.master.service;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** A shard's table of entries against a HashMap as the model, through growth, colliding keys and removals. */
@Timeout(60)
class KeyTableEntriesTest {

    /** Strings with one hash: "Aa" and "BB" hash alike, so every sequence of them does too. */
    static List<String> collidingKeys(int pairs) {
        List<String> keys = new ArrayList<>();
        for (int bits = 0; bits < 1 << pairs; bits++) {
            StringBuilder key = new StringBuilder("tenant\0");
            for (int p = 0; p < pairs; p++) {
                key.append((bits >> p & 1) == 0 ? "Aa" : "BB");
            }
            keys.add(key.toString());
        }
        return keys;
    }

    @Test
    void random_adds_and_removes_keep_the_same_entries_as_a_map_through_growth_and_colliding_chains() {
        KeyTable.Entries table = new KeyTable.Entries(0);
        Map<String, KeyTable.Entry> model = new HashMap<>();
        List<String> keys = new ArrayList<>(collidingKeys(6)); // 64 keys in one chain
        for (int i = 0; i < 5_000; i++) {
            keys.add("tenant\0key-" + i);
        }
        Random random = new Random(7);
        for (int step = 0; step < 60_000; step++) {
            String key = new String(keys.get(random.nextInt(keys.size()))); // equal, never the same instance
            if (random.nextInt(3) == 0) {
                table.remove(key);
                model.remove(key);
            } else {
                KeyTable.Entry entry = table.getOrAdd(key);
                KeyTable.Entry before = model.putIfAbsent(key, entry);
                assertSame(before == null ? entry : before, entry, "one entry per key: " + key);
            }
            assertEquals(model.size(), table.size());
        }
        for (String key : keys) {
            assertSame(model.get(key), table.get(new String(key)), key);
        }
        Set<KeyTable.Entry> iterated = new HashSet<>();
        for (KeyTable.Entry entry : table) {
            assertSame(model.get(entry.key), entry, entry.key);
            iterated.add(entry);
        }
        assertEquals(model.size(), iterated.size(), "every entry once");
    }

    @Test
    void put_files_an_entry_in_place_of_the_one_its_key_had() {
        KeyTable.Entries table = new KeyTable.Entries(4);
        List<String> keys = collidingKeys(3);
        keys.forEach(table::getOrAdd);
        KeyTable.Entry replacement = new KeyTable.Entry(new String(keys.get(3)));
        KeyTable.Entry old = table.get(keys.get(3));
        table.put(replacement);
        assertNotSame(old, table.get(keys.get(3)));
        assertSame(replacement, table.get(keys.get(3)));
        assertEquals(keys.size(), table.size());
        table.remove(keys.get(0));
        assertNull(table.get(keys.get(0)));
        for (String key : keys.subList(1, keys.size())) {
            assertEquals(key, table.get(key).key);
        }
    }
}
