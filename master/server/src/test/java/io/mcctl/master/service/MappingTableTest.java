package io.mcctl.master.service;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.master.protocol.Placement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A shard's mapping table against a HashMap of records as the model: adds, replacements, removals (each moving the
 * last mapping into the hole), growth, colliding hashes, keys of any UTF-16 units, and the arena's compaction.
 */
@Timeout(120)
class MappingTableTest {

    /** What the model holds of a mapping. */
    record Held(int bucket, long offset, long size, int crc, boolean pinned, long lastUsed, long leaseUntil, long unconfirmed) {
    }

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

    @Provide
    Arbitrary<List<String>> keySets() {
        // Any UTF-16 unit (unpaired surrogates and NUL included), short so that the same key comes up again.
        Arbitrary<String> any = Arbitraries.strings().all().ofMinLength(0).ofMaxLength(6);
        Arbitrary<String> ascii = Arbitraries.strings().withCharRange('a', 'd').ofMinLength(1).ofMaxLength(3);
        return Arbitraries.oneOf(any, ascii).list().ofMinSize(1).ofMaxSize(60);
    }

    @Property(tries = 300)
    void every_sequence_of_changes_keeps_the_table_equal_to_the_model(@ForAll("keySets") List<String> keySet,
                                                                      @ForAll @IntRange(min = 1, max = 3000) int steps, @ForAll long seed) {
        List<String> keys = new ArrayList<>(keySet);
        keys.addAll(collidingKeys(4)); // 16 keys with one hash: one probe run
        run(keys, steps, new Random(seed));
    }

    @Test
    void a_hundred_thousand_changes_through_growth_compaction_and_long_probe_runs() {
        List<String> keys = new ArrayList<>(collidingKeys(7)); // 128 keys with one hash
        for (int i = 0; i < 20_000; i++) {
            keys.add("tenant\0key-" + i + (i % 7 == 0 ? "-\u00e9\u4e2d\ud83d\ude00" : ""));
        }
        run(keys, 100_000, new Random(11));
    }

    /** Random changes of the keys, the model and the table compared after every step and fully at the end. */
    private static void run(List<String> keys, int steps, Random random) {
        MappingTable table = new MappingTable();
        Map<String, Held> model = new HashMap<>();
        for (int step = 0; step < steps; step++) {
            String key = new String(keys.get(random.nextInt(keys.size()))); // equal, never the same instance
            int m = table.find(key);
            assertEquals(model.containsKey(key), m >= 0, "found: " + printable(key));
            switch (random.nextInt(5)) {
                case 0, 1 -> {
                    // Made by a commit of some log sequence (not yet found durable), or by one the log held (0).
                    Held held = new Held(random.nextInt(256), random.nextLong() & Long.MAX_VALUE, 1 + random.nextInt(1 << 20),
                            random.nextInt(), random.nextBoolean(), random.nextLong(), 0, random.nextBoolean() ? 0 : random.nextLong() & Long.MAX_VALUE);
                    if (m < 0) {
                        int added = table.add(key, held.bucket, held.offset, held.size, held.crc, held.pinned, held.lastUsed);
                        assertEquals(table.size() - 1, added, "a new mapping takes the next number");
                        assertEquals(0, table.unconfirmedSequence(added), "added with no lease and nothing to confirm");
                        table.setUnconfirmedSequence(added, held.unconfirmed);
                    } else {
                        table.setPlacement(m, new Placement(held.bucket, held.offset, held.size, held.crc));
                        table.setPinned(m, held.pinned);
                        table.setLastUsedNanos(m, held.lastUsed);
                        table.setUnconfirmedSequence(m, held.unconfirmed);
                    }
                    model.put(key, held);
                }
                case 2 -> {
                    if (m >= 0) {
                        long until = random.nextLong() & Long.MAX_VALUE;
                        table.setLeaseUntilNanos(m, until); // a lease is granted only once the commit is durable: nothing left to confirm
                        Held h = model.get(key);
                        model.put(key, new Held(h.bucket, h.offset, h.size, h.crc, h.pinned, h.lastUsed, until, 0));
                    }
                }
                default -> {
                    if (m >= 0) {
                        table.remove(m);
                        model.remove(key);
                    }
                }
            }
            assertEquals(model.size(), table.size());
            assertEquals(model.isEmpty(), table.isEmptyHint());
            int found = table.find(key);
            if (model.containsKey(key)) {
                assertHolds(model.get(key), table, found, key);
            } else {
                assertEquals(-1, found, printable(key));
            }
        }
        for (String key : keys) {
            Held held = model.get(key);
            int m = table.find(new String(key));
            if (held == null) {
                assertEquals(-1, m, printable(key));
            } else {
                assertHolds(held, table, m, key);
            }
        }
        Set<String> listed = new HashSet<>();
        for (int m = 0; m < table.size(); m++) {
            String key = table.key(m);
            assertTrue(model.containsKey(key), printable(key));
            assertEquals(m, table.find(key), "a mapping's number is where its key is found");
            listed.add(key);
        }
        assertEquals(model.keySet(), listed, "every mapping once");
    }

    @Test
    void the_key_arena_reuses_the_room_of_removed_keys_instead_of_growing() {
        MappingTable table = new MappingTable();
        for (int i = 0; i < 10_000; i++) {
            table.add("tenant\0first-" + i, 0, i * 4096L, 1, 0, false, 0);
        }
        while (table.size() > 10) {
            table.remove(table.size() / 2);
        }
        int capacity = table.keyArenaCapacity();
        List<String> survivors = new ArrayList<>();
        for (int m = 0; m < table.size(); m++) {
            survivors.add(table.key(m));
        }
        // A million new keys through the table, at most a hundred live at once: 25 MB of keys in all.
        for (int i = 0; i < 1_000_000; i++) {
            table.add("tenant\0churn-" + i, 1, i * 4096L, 1, 0, false, i);
            if (table.size() > 100) {
                table.remove(table.find("tenant\0churn-" + (i - 90)));
            }
        }
        assertEquals(capacity, table.keyArenaCapacity(), "compaction keeps the arena at the size it had");
        for (String key : survivors) {
            assertEquals(key, table.key(table.find(key)));
        }
        assertEquals(1, table.bucket(table.find("tenant\0churn-999999")));
    }

    private static void assertHolds(Held held, MappingTable table, int m, String key) {
        assertTrue(m >= 0, printable(key));
        assertEquals(key, table.key(m), "the key comes back exactly");
        assertEquals(new Placement(held.bucket, held.offset, held.size, held.crc), table.placement(m), printable(key));
        assertTrue(table.sameAs(m, table.placement(m)));
        assertEquals(held.pinned, table.pinned(m), printable(key));
        assertEquals(held.lastUsed, table.lastUsedNanos(m), printable(key));
        assertEquals(held.leaseUntil, table.leaseUntilNanos(m), printable(key));
        assertEquals(held.unconfirmed, table.unconfirmedSequence(m), printable(key));
    }

    @Test
    void keys_that_one_encoding_would_confuse_stay_apart_and_prefixes_compare_by_unit() {
        MappingTable table = new MappingTable();
        // A lone surrogate and '?' (what UTF-8 would make of it), a pair and its halves apart, NUL inside a key.
        List<String> keys = List.of("t\0a\ud800", "t\0a?", "t\0\ud83d\ude00", "t\0\ud83d", "t\0\ude00", "t\0a\0b", "t\0a", "t\0\u00e9", "t\0e\u0301");
        for (int i = 0; i < keys.size(); i++) {
            table.add(keys.get(i), i, i * 4096L, 1 + i, i, false, 0);
        }
        for (int i = 0; i < keys.size(); i++) {
            int m = table.find(new String(keys.get(i)));
            assertEquals(i, table.bucket(m), printable(keys.get(i)));
            assertEquals(keys.get(i), table.key(m));
        }
        int a = table.find("t\0a");
        assertTrue(table.keyStartsWith(a, "t\0"));
        assertTrue(table.keyStartsWith(a, "t\0a"));
        assertFalse(table.keyStartsWith(a, "t\0a\0"));
        assertTrue(table.keyStartsWith(table.find("t\0a\0b"), "t\0a\0"));
        assertFalse(table.keyStartsWith(table.find("t\0\ud83d\ude00"), "t\0\ude00"));
        assertTrue(table.keyStartsWith(table.find("t\0\ud83d\ude00"), "t\0\ud83d"));
        assertEquals(-1, table.find("t\0b"));
        assertEquals(-1, table.find("t\0"));
    }

    @Test
    void a_key_of_as_many_bytes_as_units_compares_equal_only_to_itself() {
        MappingTable table = new MappingTable();
        table.add("t\0AB", 1, 0, 1, 0, false, 0);
        table.add("t\0\u00e9", 2, 4096, 1, 0, false, 0); // four bytes: t, NUL, then C3 A9
        int ascii = table.find("t\0AB");
        int accented = table.find("t\0\u00e9");
        // Units whose low byte is the stored byte, but which are not ASCII: a key of as many units as bytes must not match.
        assertFalse(table.keyStartsWith(ascii, "t\0A\u0142"));
        assertFalse(table.keyStartsWith(ascii, "\u0174\0AB"));
        assertFalse(table.keyStartsWith(ascii, "t\0AC"));
        assertTrue(table.keyStartsWith(ascii, "t\0AB"));
        // Units of the stored bytes' values (0xC3, 0xA9) and ASCII units, as many as the stored bytes: no match either.
        assertFalse(table.keyStartsWith(accented, "t\0\u00c3\u00a9"));
        assertFalse(table.keyStartsWith(accented, "t\0Ci"));
        assertTrue(table.keyStartsWith(accented, "t\0\u00e9"));
        assertEquals(-1, table.find("t\0A\u0142"));
        assertEquals("t\0AB", table.key(ascii));
        assertEquals("t\0\u00e9", table.key(accented));
    }

    @Test
    void put_from_another_table_replaces_a_key_it_holds_and_adds_the_rest() {
        MappingTable into = new MappingTable(4, 8);
        into.add("t\0one", 1, 0, 10, 11, false, 5);
        MappingTable from = new MappingTable();
        from.add("t\0one", 2, 4096, 20, 21, true, 6);
        from.add("t\0tw\u00f6", 3, 8192, 30, 31, false, 7);
        from.add("t\0three", 4, 12288, 40, 41, false, 8); // ASCII, new to the table: found by the ASCII comparison
        for (int m = 0; m < from.size(); m++) {
            into.putFrom(from, m);
        }
        assertEquals(3, into.size());
        assertEquals(new Placement(4, 12288, 40, 41), into.placement(into.find("t\0three")));
        int one = into.find("t\0one");
        assertEquals(new Placement(2, 4096, 20, 21), into.placement(one));
        assertTrue(into.pinned(one));
        int two = into.find("t\0tw\u00f6");
        assertEquals(new Placement(3, 8192, 30, 31), into.placement(two));
        assertEquals("t\0tw\u00f6", into.key(two));
    }

    /**
     * The read-ahead runs without the shard lock, so a racing change can hand its hints any value: a slot of another
     * index, a key field of a record being moved or removed. Whatever they get, they read within their arrays.
     */
    @Property(tries = 500)
    void the_read_ahead_hints_read_within_their_arrays_whatever_they_are_given(@ForAll long slot, @ForAll long keyField,
                                                                              @ForAll @IntRange(min = 0, max = 40) int mappings) {
        MappingTable table = new MappingTable();
        for (int i = 0; i < mappings; i++) {
            table.add("t\0key-" + i, 1, 4096L * i, 10, 0, false, 0);
        }
        long[] slots = {slot, slot & 0xFFFFFFFFL, (slot & 0xFF) + 1, table.slotHint((int) slot), table.slotHint("t\0key-0".hashCode())};
        for (long s : slots) {
            long key = table.recordHint(s);
            table.recordTailHint(s);
            table.keyBytesHint(key);
        }
        long[] keys = {keyField, keyField & 0x7FFFFFFF_7FFFFFFFL, (keyField & 0xFF_00000000L) | 0x7FFFFFFF, keyField & 0xFFFFFFFF_00000000L};
        for (long k : keys) {
            table.keyBytesHint(k);
        }
    }

    private static String printable(String key) {
        StringBuilder out = new StringBuilder();
        key.chars().forEach(c -> out.append(c >= 0x20 && c < 0x7F ? String.valueOf((char) c) : String.format("\\u%04x", c)));
        return out.toString();
    }
}
