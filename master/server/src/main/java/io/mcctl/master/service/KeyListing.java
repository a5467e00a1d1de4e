package io.mcctl.master.service;

import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.protocol.KeyRules;
import io.mcctl.master.protocol.Placement;
import io.mcctl.master.protocol.Quoted;
import io.mcctl.master.service.PageService.KeyPage;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Listing a tenant's committed keys page by page ({@link PageService#listKeys}): one pass over the table when a listing
 * starts (or when its cursor has been dropped), kept as a sorted cursor ({@link ListingCursors}), then only the keys each
 * page returns, each looked up again under its shard lock.
 *
 * <p>Locks: one shard lock at a time; {@link ListingCursors} guards its cursors with its own monitor, taken with no shard
 * lock held.
 */
final class KeyListing {

    /** What a listed key costs in an answer besides its key and path: offsets, sizes, field tags. */
    static final int LISTED_KEY_OVERHEAD_BYTES = 48;

    private final PageContext context;
    private final PageState state;
    private final KeyTable keys;
    private final ListingCursors listings = new ListingCursors();

    KeyListing(PageContext context) {
        this.context = context;
        this.state = context.state;
        this.keys = context.keys;
    }

    Result<KeyPage> listKeys(String tenant, String prefix, int pageSize, String pageToken, long maxBytes, boolean lease,
                                     AnswerBarrier wait) {
        String invalid = KeyRules.checkTenant(tenant);
        if (invalid == null && (pageSize < 1 || pageSize > PageService.MAX_LIST_PAGE)) {
            invalid = "page size " + pageSize + " is outside 1.." + PageService.MAX_LIST_PAGE;
        }
        ListingCursors.Token token = null;
        if (invalid == null) {
            token = ListingCursors.Token.parse(pageToken);
            if (token == null) {
                invalid = "page token " + Quoted.of(pageToken) + " is not one this master gave out; start the listing again without one";
            }
        }
        if (invalid != null) {
            return Result.error(ErrorCode.INVALID_PARAMS, invalid);
        }
        String scopedPrefix = KeyRules.scopedKey(tenant, prefix == null ? "" : prefix);
        long now = state.now();
        ListingCursors.Cursor cursor = listings.resume(token, scopedPrefix, now);
        int index = token.nextIndex();
        if (cursor == null) {
            cursor = listings.start(scopedPrefix, collectKeys(scopedPrefix, token.lastScopedKey(scopedPrefix)), now);
            index = 0;
        }
        String[] sorted = cursor.keys();
        List<Map.Entry<String, Placement>> page = new ArrayList<>(Math.min(pageSize, 1024));
        long bytes = 0;
        String last = null;
        while (index < sorted.length && page.size() < pageSize && bytes < maxBytes) {
            String scoped = sorted[index++];
            KeyTable.Shard shard = keys.shardOf(scoped);
            Placement placement = null;
            int bucket = -1;
            shard.lock.lock();
            try {
                MappingTable table = shard.mappings;
                int m = table.find(scoped);
                long notDurable = m < 0 ? 0 : context.notDurable(table, m);
                if (notDurable == 0 && m >= 0) {
                    if (lease) {
                        context.grantLease(table, m);
                    }
                    placement = table.placement(m);
                    bucket = placement.bucket();
                } else if (notDurable != 0 && context.mayWait(wait)) {
                    wait.needs(notDurable);
                    bucket = table.bucket(m); // listed without its placement, for now: it waits for the log
                }
            } finally {
                shard.lock.unlock();
            }
            last = scoped;
            if (bucket >= 0) {
                String key = scoped.substring(tenant.length() + 1);
                page.add(new java.util.AbstractMap.SimpleImmutableEntry<>(key, placement));
                bytes += KeyRules.utf8Length(key) + context.space.path(bucket).length() + LISTED_KEY_OVERHEAD_BYTES;
            }
        }
        String next = "";
        if (index < sorted.length) {
            listings.keep(cursor);
            next = ListingCursors.tokenFor(cursor, index, last.substring(tenant.length() + 1));
        }
        return Result.ok(new KeyPage(page, next));
    }

    /** The committed scoped keys with a prefix after {@code after} (null: all), in UTF-8 order: one pass over the table. */
    private String[] collectKeys(String scopedPrefix, String after) {
        List<String> found = new ArrayList<>();
        for (int s = 0; s < KeyTable.SHARDS; s++) {
            KeyTable.Shard shard = keys.shard(s);
            shard.lock.lock();
            try {
                MappingTable table = shard.mappings;
                for (int m = 0; m < table.size(); m++) {
                    if (table.keyStartsWith(m, scopedPrefix)) {
                        String scoped = table.key(m);
                        if (after == null || ListingCursors.compareUtf8(scoped, after) > 0) {
                            found.add(scoped);
                        }
                    }
                }
            } finally {
                shard.lock.unlock();
            }
        }
        String[] sorted = found.toArray(new String[0]);
        java.util.Arrays.parallelSort(sorted, ListingCursors::compareUtf8);
        return sorted;
    }
}
