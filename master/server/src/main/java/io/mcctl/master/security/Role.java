package io.mcctl.master.security;

import java.util.Locale;

/** What a token (or a client certificate) may do beyond the tenants it names. */
public enum Role {
    /** Read and change its tenants' keys; read the layout and the totals. */
    TENANT,
    /** Read its tenants' keys, the layout, the totals, bucket bitmaps and a page check without repair; change nothing. */
    MONITOR,
    /** Everything a tenant may, on its tenants, plus snapshots and page checks with repair. */
    ADMIN;

    public String label() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** The role named {@code text}, or null. */
    public static Role parse(String text) {
        for (Role role : values()) {
            if (role.label().equals(text)) {
                return role;
            }
        }
        return null;
    }

    /** Whether this role grants {@code permission} (tenant permissions also need the tenant, see {@link Grant}). */
    public boolean allows(Permission permission) {
        return switch (permission) {
            case TENANT_READ, CLUSTER_READ -> true;
            case TENANT_WRITE -> this != MONITOR;
            case MONITOR -> this != TENANT;
            case ADMIN -> this == ADMIN;
        };
    }
}
