package io.mcctl.master.protocol;

import io.mcctl.master.proto.v1.PromotionTask;

/** A promotion task's holder as the master writes it and the node daemon, the CLI and the clients read it. */
public final class PromotionTasks {

    /** The holder id of a task no node has taken yet (all zeros, master.proto's PromotionTask.holder_id): any node may take it. */
    public static final String ANY_NODE = "00000000-0000-0000-0000-000000000000";

    private PromotionTasks() {
    }

    /** Whether no node has taken the task yet. */
    public static boolean queued(PromotionTask task) {
        return ANY_NODE.equals(task.getHolderId());
    }
}
