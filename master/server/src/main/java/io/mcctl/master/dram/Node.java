package io.mcctl.master.dram;

/**
 * A node as the DRAM tier sees it: the id and endpoint its MEMORY descriptors name, whether it is alive, and its segment.
 * The master's node registry implements it; this package never registers, pings or declares a node dead itself.
 *
 * <p>Its methods take no lock: the DRAM tier calls them with a segment's monitor held, and the registry may hold a node's
 * monitor around a segment's (a PutStart checks, under it, that the node is alive), never the other way round.
 */
public interface Node {

    /** Its client id. */
    String id();

    /** host:port of its transport. */
    String endpoint();

    /** False once it missed its TTL; its replicas are dropped then and a copy on it is never answered. */
    boolean alive();

    /** Its DRAM segment, or null when it registered none. */
    MemoryTier.Segment segment();
}
