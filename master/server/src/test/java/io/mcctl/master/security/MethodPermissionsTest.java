package io.mcctl.master.security;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.grpc.MethodDescriptor;
import io.mcctl.master.proto.v1.MasterServiceGrpc;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(10)
class MethodPermissionsTest {

    @Test
    void every_rpc_of_the_service_is_declared() {
        List<String> missing = new ArrayList<>();
        for (MethodDescriptor<?, ?> method : MasterServiceGrpc.getServiceDescriptor().getMethods()) {
            if (!MethodPermissions.declared(method.getBareMethodName())) {
                missing.add(method.getBareMethodName());
            }
        }
        assertEquals(List.of(), missing, "RPCs without a rule in MethodPermissions (they are admin-only until declared)");
    }

    @Test
    void every_rpc_of_a_nodes_endpoint_is_declared() {
        List<String> missing = new ArrayList<>();
        for (MethodDescriptor<?, ?> method : io.mcctl.master.proto.v1.NodeServiceGrpc.getServiceDescriptor().getMethods()) {
            if (!MethodPermissions.declared(method.getBareMethodName())) {
                missing.add(method.getBareMethodName());
            }
        }
        assertEquals(List.of(), missing, "NodeService RPCs without a rule in MethodPermissions");
    }

    @Test
    void an_undeclared_rpc_needs_admin() {
        assertEquals(Permission.ADMIN, MethodPermissions.ruleOf("SomeFutureRpc").permissionFor(null));
        assertEquals(List.of(), MethodPermissions.ruleOf("SomeFutureRpc").tenantsOf(null));
    }
}
