package io.mcctl.master.security;

/** What one RPC needs; {@link MethodPermissions} says which RPC needs which. */
public enum Permission {
    /** Learn where a tenant's objects live, or whether they exist: needs the tenant. */
    TENANT_READ,
    /** Allocate, commit, free or remove a tenant's objects: needs the tenant and a role that writes. */
    TENANT_WRITE,
    /** Cluster-wide facts every client needs or may see (layout, totals): any known caller. */
    CLUSTER_READ,
    /** Inspect the page state of every tenant without changing it: monitor or admin. */
    MONITOR,
    /** Change or stall what every tenant depends on: admin only. */
    ADMIN
}
