package io.mcctl.cli.bench;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * An exact least-recently-used cache of a fixed number of equal objects: the yardstick the tier's sampled eviction is
 * measured against. A miss inserts the key, evicting the least recently used one when full. Not thread-safe.
 */
public final class ExactLru {

    private final int capacity;
    private final LinkedHashMap<Integer, Boolean> entries;

    public ExactLru(int capacity) {
        if (capacity < 1) {
            throw new IllegalArgumentException("an LRU cache holds at least one object, not " + capacity);
        }
        this.capacity = capacity;
        this.entries = new LinkedHashMap<>(capacity * 2, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<Integer, Boolean> eldest) {
                return size() > ExactLru.this.capacity;
            }
        };
    }

    /** Uses {@code key}: true on a hit; on a miss it is cached. */
    public boolean access(int key) {
        if (entries.get(key) != null) {
            return true;
        }
        entries.put(key, Boolean.TRUE);
        return false;
    }

    /** Hits of a cache of {@code capacity} objects, starting empty, over {@code trace}. */
    public static long hits(int[] trace, int capacity) {
        ExactLru lru = new ExactLru(capacity);
        long hits = 0;
        for (int key : trace) {
            if (lru.access(key)) {
                hits++;
            }
        }
        return hits;
    }
}
