package io.mcctl.master.service;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
class ListingCursorsTest {

    @Property(tries = 2000)
    void keys_compare_as_their_utf8_bytes_do(@ForAll String a, @ForAll String b) {
        int want = Integer.signum(Arrays.compareUnsigned(a.getBytes(StandardCharsets.UTF_8), b.getBytes(StandardCharsets.UTF_8)));
        // Unpaired surrogates all encode as '?', so only well-formed strings have one UTF-8 order to match.
        if (wellFormed(a) && wellFormed(b)) {
            assertEquals(want, Integer.signum(ListingCursors.compareUtf8(a, b)), () -> escape(a) + " vs " + escape(b));
        }
    }

    @Test
    void a_character_above_U_FFFF_sorts_after_U_FF5E_as_in_utf8() {
        assertEquals(-1, Integer.signum(ListingCursors.compareUtf8("\uFF5E", "\uD83D\uDE00")));
        assertEquals(1, Integer.signum("\uFF5E".compareTo("\uD83D\uDE00")), "where Java's own order differs");
    }

    @Test
    void listings_kept_are_bounded_in_number_and_in_keys_dropping_the_least_recently_used() {
        ListingCursors cursors = new ListingCursors();
        ListingCursors.Cursor first = cursors.start("t\0", new String[] {"t\0a", "t\0b"}, 0);
        cursors.keep(first);
        for (int i = 0; i < ListingCursors.MAX_CURSORS; i++) {
            cursors.keep(cursors.start("t\0", new String[] {"t\0x"}, 0));
        }
        assertEquals(ListingCursors.MAX_CURSORS, cursors.size());
        assertNull(cursors.resume(new ListingCursors.Token(first.id(), 1, "a"), "t\0", 0), "the oldest listing was dropped");
        ListingCursors.Cursor big = cursors.start("t\0", new String[(int) ListingCursors.MAX_KEPT_KEYS], 0);
        Arrays.fill(big.keys(), "t\0k");
        cursors.keep(big);
        assertEquals(1, cursors.size(), "one listing of the most keys kept pushes out every other");
        assertNotNull(cursors.resume(new ListingCursors.Token(big.id(), 1, "k"), "t\0", 0));
    }

    @Test
    void a_token_round_trips_and_a_foreign_one_is_refused() {
        ListingCursors.Cursor cursor = new ListingCursors().start("t\0", new String[] {"t\0a"}, 0);
        ListingCursors.Token token = ListingCursors.Token.parse(ListingCursors.tokenFor(cursor, 1, "ключ/\uD83D\uDE00"));
        assertEquals(new ListingCursors.Token(cursor.id(), 1, "ключ/\uD83D\uDE00"), token);
        assertNull(ListingCursors.Token.parse("last-key-of-an-old-master"));
        assertEquals(ListingCursors.Token.FIRST, ListingCursors.Token.parse(""));
    }

    private static boolean wellFormed(String s) {
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (Character.isHighSurrogate(c)) {
                if (i + 1 >= s.length() || !Character.isLowSurrogate(s.charAt(i + 1))) {
                    return false;
                }
                i++;
            } else if (Character.isLowSurrogate(c)) {
                return false;
            }
        }
        return true;
    }

    private static String escape(String s) {
        StringBuilder out = new StringBuilder();
        s.chars().forEach(c -> out.append(String.format("\\u%04X", c)));
        return out.toString();
    }
}
