/**
 * Eviction policy: when the tier evicts ({@link io.mcctl.master.service.eviction.EvictionPolicy}, the watermarks) and
 * which objects go first ({@link io.mcctl.master.service.eviction.VictimOrder}, with
 * {@link io.mcctl.master.service.eviction.LeastRecentlyUsed} as the master's). The mechanism that samples the tables and
 * evicts under their shard locks stays beside those tables, in {@code io.mcctl.master.service} ({@code Evictor}): the
 * policy here sees numbers only, takes no lock and changes nothing.
 */
package io.mcctl.master.service.eviction;
