package io.mcctl.master.protocol;

import java.util.UUID;

/** What a tenant id, a key, a size and a node's client id may be. Checked before anything changes. */
public final class KeyRules {

    public static final int MAX_TENANT_LENGTH = 64;
    public static final int MAX_KEY_BYTES = 4096;
    public static final String TENANT_CHARACTERS = "letters, digits, '.', '_' and '-'";

    private KeyRules() {
    }

    /** What a miss of {@code key} in {@code tenant} says: the master's answer, and a client's that rebuilds it from a code. */
    public static String notFound(String tenant, String key) {
        return "key " + Quoted.of(key) + " not found in tenant " + Quoted.of(tenant);
    }

    /** Why {@code tenant} is not a tenant id, or null when it is one. */
    public static String checkTenant(String tenant) {
        if (tenant == null || tenant.isEmpty()) {
            return "tenant id is empty";
        }
        if (tenant.length() > MAX_TENANT_LENGTH) {
            return "tenant id of " + tenant.length() + " characters is longer than " + MAX_TENANT_LENGTH;
        }
        for (int i = 0; i < tenant.length(); i++) {
            char c = tenant.charAt(i);
            boolean allowed = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
            if (!allowed) {
                return "tenant id " + Quoted.of(tenant) + " has character " + describe(c) + "; allowed are " + TENANT_CHARACTERS;
            }
        }
        return null;
    }

    /** Why {@code key} is not a key, or null when it is one. */
    public static String checkKey(String key) {
        if (key == null || key.isEmpty()) {
            return "key is empty";
        }
        if (key.length() <= MAX_KEY_BYTES / 3) {
            return null; // no UTF-16 unit takes more than three bytes: short enough without counting them
        }
        int bytes = utf8Length(key);
        if (bytes > MAX_KEY_BYTES) {
            return "key of " + bytes + " bytes is longer than " + MAX_KEY_BYTES;
        }
        return null;
    }

    /**
     * Whether every UTF-16 unit of {@code s} is below 0x80, so that its UTF-8 bytes are its units, one each. The units are
     * or-ed together rather than tested one by one: this is asked of every key on the hot path, keys are mostly ASCII,
     * and a loop with no branch per unit is the cheaper one for them.
     */
    public static boolean isAscii(String s) {
        int any = 0;
        for (int i = 0; i < s.length(); i++) {
            any |= s.charAt(i);
        }
        return any < 0x80;
    }

    /**
     * Copies the bytes of {@code ascii}, which must be {@link #isAscii}, into {@code into} from {@code at}: each unit's low
     * byte, which for ASCII is its UTF-8 byte, in one array copy (the deprecated String method is the one that copies a
     * string's bytes without making an array of its own).
     */
    @SuppressWarnings("deprecation")
    public static void copyAscii(String ascii, byte[] into, int at) {
        ascii.getBytes(0, ascii.length(), into, at);
    }

    /** UTF-8 length of a string, counted without encoding it; an unpaired surrogate counts as the '?' that encoding gives. */
    public static int utf8Length(String s) {
        if (isAscii(s)) {
            return s.length();
        }
        int bytes = 0;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c < 0x80) {
                bytes++;
            } else if (c < 0x800) {
                bytes += 2;
            } else if (Character.isHighSurrogate(c) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
                bytes += 4;
                i++;
            } else if (Character.isSurrogate(c)) {
                bytes++;
            } else {
                bytes += 3;
            }
        }
        return bytes;
    }

    /** Why {@code size} cannot be allocated in buckets of {@code bucketSize}, or null. */
    public static String checkSize(long size, long bucketSize) {
        if (size <= 0) {
            return "size " + size + " must be at least 1 byte";
        }
        if (size > bucketSize) {
            return "size " + size + " is larger than a bucket (" + bucketSize + " bytes)";
        }
        return null;
    }

    /** Why {@code clientId} is not a node's client id (a UUID in its canonical lower-case form), or null when it is one. */
    public static String checkClientId(String clientId) {
        try {
            if (UUID.fromString(clientId).toString().equals(clientId)) {
                return null;
            }
        } catch (IllegalArgumentException e) {
            // fall through
        }
        return "client_id " + Quoted.of(clientId) + " is not a UUID in its canonical lower-case form (e.g. " + new UUID(0, 0) + ")";
    }

    /** The key the master files an object under: tenant id, NUL, key (tenant ids never hold NUL). */
    public static String scopedKey(String tenant, String key) {
        return tenant + '\0' + key;
    }

    /** The tenant id of a {@link #scopedKey}. */
    public static String tenantOf(String scopedKey) {
        return scopedKey.substring(0, scopedKey.indexOf('\0'));
    }

    /** The key of a {@link #scopedKey}. */
    public static String keyOf(String scopedKey) {
        return scopedKey.substring(scopedKey.indexOf('\0') + 1);
    }

    private static String describe(char c) {
        return Character.isISOControl(c) ? String.format("U+%04X", (int) c) : "'" + c + "'";
    }
}
