package io.mcctl.master.service;

import io.mcctl.master.protocol.Placement;

/** Every committed mapping, in-flight allocation and quarantined range: the tools' read of a recovered state. */
public interface StateVisitor {
    void mapping(String tenant, String key, Placement placement, boolean pinned);

    void inFlight(Change.Allocated allocation);

    void quarantined(QuarantinedRange range);

    /** A range held for a reservation a crash left open (quarantine that recovery derives, not snapshotted). */
    default void held(QuarantinedRange range) {
    }
}
