package io.mcctl.master.security;

import java.util.Set;

/**
 * What one caller may do: its name (for audit lines, never a secret), its role and its tenants, and optionally a
 * second grant that must allow the call as well (a token presented over a client certificate that names tenants).
 *
 * @param tenants the tenants it may use; {@link #ALL_TENANTS} among them means every tenant
 * @param also null, or a grant that must allow every call too
 */
public record Grant(String name, Role role, Set<String> tenants, Grant also) {

    /** The tenant list entry that stands for every tenant. */
    public static final String ALL_TENANTS = "*";

    public Grant {
        tenants = Set.copyOf(tenants);
    }

    public Grant(String name, Role role, Set<String> tenants) {
        this(name, role, tenants, null);
    }

    public boolean allows(Permission permission) {
        return role.allows(permission) && (also == null || also.allows(permission));
    }

    public boolean allowsTenant(String tenant) {
        return (tenants.contains(ALL_TENANTS) || tenants.contains(tenant)) && (also == null || also.allowsTenant(tenant));
    }

    /** This grant narrowed by {@code other}: allowed only what both allow. */
    public Grant and(Grant other) {
        return other == null ? this : new Grant(name, role, tenants, other);
    }

    /** Who, for audit lines: the token's name, and the certificate's when one narrows it. */
    public String who() {
        return also == null ? name : name + " (with " + also.who() + ")";
    }

    /** The tenants, for a message: "a, b", "every tenant" or "no tenant". */
    public String describeTenants() {
        String mine = tenants.contains(ALL_TENANTS) ? "every tenant"
                : tenants.isEmpty() ? "no tenant" : String.join(", ", new java.util.TreeSet<>(tenants));
        return also == null ? mine : mine + ", narrowed by the certificate to " + also.describeTenants();
    }
}
