package io.mcctl.master.service;

import io.mcctl.master.protocol.KeyRules;
import java.util.HashMap;

/**
 * A tenant id checked once, with its usage counters found once. A batch call resolves each distinct tenant it names
 * through a {@link Batch} and hands the result down for every key, so that what is the same for the whole batch (the
 * id's check, the probe of the tenant map, which hashes the id afresh because the wire decodes a new string for every
 * key) is done once per batch instead of once per key.
 *
 * <p>Not thread-safe: confined to the thread serving one call. The usage counters it finds are the service's own,
 * shared and thread-safe; they are looked up on first use only, so a batch whose keys all fail their checks leaves no
 * trace of its tenant.
 */
public final class Tenant {

    private final PageState state;
    final String id;
    /** Why {@link #id} is not a tenant id, or null when it is one. */
    final String problem;
    private PageState.TenantUsage usage;

    Tenant(PageState state, String id) {
        this.state = state;
        this.id = id;
        this.problem = KeyRules.checkTenant(id);
    }

    /** Only for a valid id: an invalid one has no counters. */
    PageState.TenantUsage usage() {
        PageState.TenantUsage found = usage;
        if (found == null) {
            found = state.usage(id);
            usage = found;
        }
        return found;
    }

    /** The tenants of one batch, each resolved once; a batch usually names one, so the last one is kept at hand. */
    public static final class Batch {
        private final PageState state;
        private Tenant last;
        /** Every tenant seen, from the second distinct one on: a batch of many tenants stays linear. */
        private HashMap<String, Tenant> seen;

        Batch(PageState state) {
            this.state = state;
        }

        /** The tenant {@code id} names, resolved on its first key in this batch. */
        public Tenant of(String id) {
            Tenant previous = last;
            if (previous != null && java.util.Objects.equals(previous.id, id)) {
                return previous;
            }
            Tenant found;
            if (previous == null) {
                found = new Tenant(state, id);
            } else {
                if (seen == null) {
                    seen = new HashMap<>();
                    seen.put(previous.id, previous);
                }
                found = seen.get(id);
                if (found == null) {
                    found = new Tenant(state, id);
                    seen.put(id, found);
                }
            }
            last = found;
            return found;
        }
    }
}
