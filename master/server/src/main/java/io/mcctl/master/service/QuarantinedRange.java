package io.mcctl.master.service;

/** A quarantined range as a snapshot holds it: a bucket's pages and when (wall clock) they are released. */
public record QuarantinedRange(int bucket, long firstPage, long pages, long releaseMs) {
}
