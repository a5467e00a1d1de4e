/**
 * The master's side of the DRAM tier: each node's segment allocator and the MEMORY replicas in it
 * ({@link io.mcctl.master.dram.MemoryTier}), and the promotion of DISTRIBUTED_DISK objects into a node's segment
 * ({@link io.mcctl.master.dram.Promoter}). Both are in memory only, as in Mooncake's master.
 *
 * <p>Arrows point one way: the RPC rooms in {@code io.mcctl.master.server} call in here; this package uses the page
 * service ({@code io.mcctl.master.service}), the protocol and the storage allocator, and sees the master's node
 * registry only through {@link io.mcctl.master.dram.Node} and {@link io.mcctl.master.dram.Promoter.Nodes}, which the
 * registry implements.
 */
package io.mcctl.master.dram;
