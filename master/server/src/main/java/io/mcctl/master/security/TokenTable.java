package io.mcctl.master.security;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import io.mcctl.master.protocol.KeyRules;
import io.mcctl.master.protocol.SecurityConfigException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HashMap;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The tokens file, as read once: SHA-256 of each token (the file never holds a token itself) to its grant.
 * Immutable, so a reload swaps in a new table and calls in progress keep the one they started with.
 *
 * <pre>
 * tokens:
 *   - name: ingest-a          # shown in audit lines; never the token
 *     sha256: 9f86d0...       # printf %s "$TOKEN" | sha256sum
 *     role: tenant            # tenant (default), monitor or admin
 *     tenants: [a, b]         # "*" means every tenant
 * </pre>
 */
public final class TokenTable {

    private static final Set<String> FIELDS = Set.of("name", "sha256", "role", "tenants");

    private final Path file;
    private final Map<String, Grant> byHash;
    /** Tokens already hashed and found, so a known token is hashed once; unknown ones are never kept. */
    private final Map<String, Grant> verified = new ConcurrentHashMap<>();

    private TokenTable(Path file, Map<String, Grant> byHash) {
        this.file = file;
        this.byHash = byHash;
    }

    /** Reads {@code file}; a problem is one line naming the file, the entry and what is allowed. */
    public static TokenTable read(Path file) throws SecurityConfigException {
        JsonNode root;
        try {
            root = new ObjectMapper(new YAMLFactory()).readTree(Files.readString(file, StandardCharsets.UTF_8));
        } catch (IOException e) {
            String reason = e instanceof java.nio.file.NoSuchFileException ? "no such file" : firstLine(e.getMessage());
            throw new SecurityConfigException(file + ": cannot be read as YAML: " + reason);
        }
        if (root == null || !root.isObject() || !root.has("tokens") || !root.get("tokens").isArray() || root.size() != 1) {
            throw new SecurityConfigException(file + ": allowed is one key 'tokens' holding a list of entries with name, sha256, "
                    + "role and tenants");
        }
        Map<String, Grant> byHash = new HashMap<>();
        Set<String> names = new HashSet<>();
        int index = 0;
        for (JsonNode entry : root.get("tokens")) {
            index++;
            String where = file + ": token " + index;
            if (!entry.isObject()) {
                throw new SecurityConfigException(where + " is not a mapping of name, sha256, role and tenants");
            }
            for (Iterator<String> it = entry.fieldNames(); it.hasNext(); ) {
                String field = it.next();
                if (!FIELDS.contains(field)) {
                    throw new SecurityConfigException(where + ": unknown field '" + field + "'; allowed are name, sha256, role, tenants");
                }
            }
            String name = text(entry, "name");
            if (name == null || name.isBlank() || name.chars().anyMatch(c -> c < 0x20)) {
                throw new SecurityConfigException(where + ": name is missing; every token needs a name for audit lines");
            }
            where += " (" + name + ")";
            if (!names.add(name)) {
                throw new SecurityConfigException(where + ": name is used by an earlier token; names must be unique");
            }
            String hash = text(entry, "sha256");
            if (hash == null || !hash.matches("[0-9a-fA-F]{64}")) {
                throw new SecurityConfigException(where + ": sha256 " + (hash == null ? "is missing" : "'" + hash + "' is not 64 hex digits")
                        + "; put the SHA-256 of the token there (printf %s \"$TOKEN\" | sha256sum), never the token");
            }
            String roleText = entry.has("role") ? text(entry, "role") : Role.TENANT.label();
            Role role = Role.parse(roleText);
            if (role == null) {
                throw new SecurityConfigException(where + ": role '" + roleText + "' is not tenant, monitor or admin");
            }
            Set<String> tenants = new LinkedHashSet<>();
            JsonNode list = entry.get("tenants");
            if (list != null && !list.isArray()) {
                throw new SecurityConfigException(where + ": tenants is not a list (write tenants: [a, b], or [\"*\"] for every tenant)");
            }
            if (list != null) {
                for (JsonNode tenant : list) {
                    String t = tenant.isTextual() ? tenant.asText() : tenant.toString();
                    String problem = t.equals(Grant.ALL_TENANTS) ? null : KeyRules.checkTenant(t);
                    if (problem != null) {
                        throw new SecurityConfigException(where + ": " + problem);
                    }
                    tenants.add(t);
                }
            }
            if (tenants.isEmpty() && role == Role.TENANT) {
                throw new SecurityConfigException(where + ": a tenant token needs at least one tenant");
            }
            if (byHash.put(hash.toLowerCase(java.util.Locale.ROOT), new Grant(name, role, tenants)) != null) {
                throw new SecurityConfigException(where + ": the same sha256 as an earlier token; each token must be different");
            }
        }
        return new TokenTable(file, Map.copyOf(byHash));
    }

    private static String text(JsonNode entry, String field) {
        JsonNode node = entry.get(field);
        return node == null || node.isNull() ? null : node.asText();
    }

    private static String firstLine(String message) {
        if (message == null) {
            return "unreadable";
        }
        int newline = message.indexOf('\n');
        return newline < 0 ? message : message.substring(0, newline);
    }

    /** The grant of {@code token}, or null when no entry has its hash. */
    public Grant lookup(String token) {
        Grant known = verified.get(token);
        if (known != null) {
            return known;
        }
        Grant grant = byHash.get(sha256Hex(token));
        if (grant != null) {
            verified.put(token, grant);
        }
        return grant;
    }

    public int size() {
        return byHash.size();
    }

    public Path file() {
        return file;
    }

    /** Lower-case hex SHA-256 of the token's UTF-8 bytes: what the file holds for it. */
    public static String sha256Hex(String token) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(token.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("the JDK has no SHA-256", e);
        }
    }
}
