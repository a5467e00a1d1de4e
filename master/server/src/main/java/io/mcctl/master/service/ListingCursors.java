package io.mcctl.master.service;

import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Listings in progress: the sorted keys a listing found when it started, so that each later page costs only the
 * keys it returns instead of another pass over the whole table. A page token names the cursor, where the next page
 * starts in it, and the last key listed; when the cursor has been dropped (too many listings, or an idle one) the
 * listing goes on from that key with one new pass. A key added after a listing started may be missed by it, and a
 * key removed meanwhile is skipped.
 *
 * <p>Thread-safe: the cursor map is guarded by this object's monitor; a cursor's keys never change.
 */
final class ListingCursors {

    static final int MAX_CURSORS = 64;
    /** Keys kept by all listings together: references only (8 bytes each at most), about 32 MiB. */
    static final long MAX_KEPT_KEYS = 4_000_000;
    static final long IDLE_NANOS = 120_000_000_000L;

    /** The sorted scoped keys one listing found. Immutable. */
    record Cursor(long id, String scopedPrefix, String[] keys, long createdNanos) {
    }

    /** A parsed page token; {@code cursorId} 0 and {@code lastKey} null for the first page. */
    record Token(long cursorId, int nextIndex, String lastKey) {

        static final Token FIRST = new Token(0, 0, null);

        /** The token's parts, or null when it is not one this master writes. */
        static Token parse(String token) {
            if (token == null || token.isEmpty()) {
                return FIRST;
            }
            String[] parts = token.split("\\.", 3);
            if (parts.length != 3) {
                return null;
            }
            try {
                long id = Long.parseUnsignedLong(parts[0], 16);
                int next = Integer.parseInt(parts[1]);
                String last = new String(Base64.getUrlDecoder().decode(parts[2]), StandardCharsets.UTF_8);
                return next < 0 || last.isEmpty() ? null : new Token(id, next, last);
            } catch (IllegalArgumentException e) {
                return null;
            }
        }

        /** The last key listed as a scoped key of the listing's tenant, or null on the first page. */
        String lastScopedKey(String scopedPrefix) {
            return lastKey == null ? null : scopedPrefix.substring(0, scopedPrefix.indexOf('\0') + 1) + lastKey;
        }
    }

    private final AtomicLong ids = new AtomicLong();
    private final LinkedHashMap<Long, Cursor> cursors = new LinkedHashMap<>(16, 0.75f, true);
    private long keptKeys;

    /** The cursor and start index a token continues, or null when the listing must go on from its last key. */
    synchronized Cursor resume(Token token, String scopedPrefix, long nowNanos) {
        dropIdle(nowNanos);
        Cursor cursor = token.cursorId() == 0 ? null : cursors.get(token.cursorId());
        if (cursor == null || !cursor.scopedPrefix().equals(scopedPrefix) || token.nextIndex() < 1 || token.nextIndex() > cursor.keys().length
                || !cursor.keys()[token.nextIndex() - 1].equals(token.lastScopedKey(scopedPrefix))) {
            return null;
        }
        return cursor;
    }

    /** A listing's keys, not yet kept: {@link #keep} keeps it once a page leaves keys for a next one. */
    Cursor start(String scopedPrefix, String[] sortedKeys, long nowNanos) {
        return new Cursor(ids.incrementAndGet(), scopedPrefix, sortedKeys, nowNanos);
    }

    /**
     * Keeps a listing for its next pages, dropping the least recently used ones beyond {@value #MAX_CURSORS} listings
     * or {@value #MAX_KEPT_KEYS} keys in all (a dropped listing goes on from its last key with one more pass).
     */
    synchronized void keep(Cursor cursor) {
        if (cursors.putIfAbsent(cursor.id(), cursor) != null) {
            return;
        }
        keptKeys += cursor.keys().length;
        Iterator<Cursor> eldest = cursors.values().iterator();
        while ((cursors.size() > MAX_CURSORS || keptKeys > MAX_KEPT_KEYS) && eldest.hasNext()) {
            Cursor old = eldest.next();
            if (old == cursor) {
                continue;
            }
            eldest.remove();
            keptKeys -= old.keys().length;
        }
    }

    private void dropIdle(long nowNanos) {
        for (Iterator<Cursor> it = cursors.values().iterator(); it.hasNext(); ) {
            Cursor c = it.next();
            if (nowNanos - c.createdNanos() > IDLE_NANOS) {
                it.remove();
                keptKeys -= c.keys().length;
            }
        }
    }

    static String tokenFor(Cursor cursor, int nextIndex, String lastKey) {
        return Long.toHexString(cursor.id()) + "." + nextIndex + "."
                + Base64.getUrlEncoder().withoutPadding().encodeToString(lastKey.getBytes(StandardCharsets.UTF_8));
    }

    /**
     * Compares two strings in the order of their UTF-8 bytes (code point order), which is what a client in any other
     * language sorts by; Java's own order differs for characters above U+FFFF against U+E000..U+FFFF.
     */
    static int compareUtf8(String a, String b) {
        int n = Math.min(a.length(), b.length());
        for (int i = 0; i < n; i++) {
            char x = a.charAt(i);
            char y = b.charAt(i);
            if (x != y) {
                return fixUp(x) - fixUp(y);
            }
        }
        return a.length() - b.length();
    }

    /** Moves surrogates above U+E000..U+FFFF, so that UTF-16 units compare as code points do. */
    private static int fixUp(char c) {
        if (c >= 0xD800) {
            return c >= 0xE000 ? c - 0x800 : c + 0x2000;
        }
        return c;
    }

    /** For tests: how many listings are kept. */
    synchronized int size() {
        return cursors.size();
    }
}
