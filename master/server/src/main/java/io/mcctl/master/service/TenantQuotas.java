package io.mcctl.master.service;

import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.protocol.KeyRules;
import java.util.Map;

/**
 * Tenants' byte quotas (set by a logged {@link Change.QuotaSet}, an admin's call) and the per-tenant counters the master
 * reports: keys, bytes, hits, misses, evictions. The counters themselves live in the state ({@link PageState.TenantUsage}),
 * where every transition, live or replayed, keeps them.
 *
 * <p>Locks: {@link #quotaLock} orders quota changes in the log as they are applied; it nests inside nothing and takes only
 * the log's lock inside it.
 */
final class TenantQuotas {

    private final PageContext context;
    private final PageState state;
    /** Orders quota changes in the log as they are applied; nests inside nothing. */
    private final Object quotaLock = new Object();

    TenantQuotas(PageContext context) {
        this.context = context;
        this.state = context.state;
    }

    /**
     * Sets a tenant's byte quota (0 removes it), logged like every change; an admin's call. Takes effect for the next
     * allocations: a tenant already above a new quota is brought under it by its own next allocations.
     *
     * @return the quota it replaced
     */
    Result<Long> setQuota(String tenant, long maxBytes) {
        String invalid = KeyRules.checkTenant(tenant);
        if (invalid == null && maxBytes < 0) {
            invalid = "quota " + maxBytes + " is negative; give a size in bytes, or 0 for no quota";
        }
        if (invalid != null) {
            return Result.error(ErrorCode.INVALID_PARAMS, invalid);
        }
        context.checkAccepting();
        synchronized (quotaLock) {
            long previous = state.usage(tenant).quotaBytes;
            context.logAndApply(new Change.QuotaSet(tenant, maxBytes));
            return Result.ok(previous);
        }
    }

    /** The byte quotas in force, by tenant. */
    Map<String, Long> quotas() {
        Map<String, Long> out = new java.util.TreeMap<>();
        state.tenants.forEach((tenant, usage) -> {
            if (usage.quotaBytes > 0) {
                out.put(tenant, usage.quotaBytes);
            }
        });
        return out;
    }

    /** A tenant's committed bytes. */
    long usedBytes(String tenant) {
        PageState.TenantUsage usage = state.tenants.get(tenant);
        return usage == null ? 0 : usage.bytes.sum();
    }

    /** Per tenant with any activity: {keys, bytes, hits, misses, evicted keys, evicted bytes, quota bytes}. */
    Map<String, long[]> tenantCounters() {
        Map<String, long[]> out = new java.util.TreeMap<>();
        state.tenants.forEach((tenant, u) -> out.put(tenant, new long[] {u.keys.sum(), u.bytes.sum(), u.hits.sum(), u.misses.sum(),
                u.evictedKeys.sum(), u.evictedBytes.sum(), u.quotaBytes}));
        return out;
    }

    /** Tenants with a committed key or an allocation in flight. */
    long activeTenants() {
        long tenants = 0;
        for (PageState.TenantUsage usage : state.tenants.values()) {
            if (usage.keys.sum() > 0 || usage.inFlight.sum() > 0) {
                tenants++;
            }
        }
        return tenants;
    }

    /** Committed keys and bytes of each tenant that has any. */
    Map<String, long[]> tenantUsage() {
        Map<String, long[]> out = new java.util.TreeMap<>();
        state.tenants.forEach((tenant, usage) -> {
            long count = usage.keys.sum();
            if (count > 0) {
                out.put(tenant, new long[] {count, usage.bytes.sum()});
            }
        });
        return out;
    }
}
