package io.mcctl.master.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.google.protobuf.DescriptorProtos.FileDescriptorProto;
import com.google.protobuf.Descriptors.FileDescriptor;
import io.mcctl.master.etcd.proto.EtcdSubsetProto;
import io.mcctl.master.proto.v1.MasterProto;
import io.mcctl.master.proto.v1.StateProto;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The wire and the on-disk records stay what deployed masters, clients and state directories know: each proto file,
 * as compiled into this build, equals the descriptor the build before the master module was split compiled from it
 * (src/test/resources/descriptors, written by mcctl at commit 5e8a58b with
 * {@code MasterProto.getDescriptor().toProto().toByteArray()} and the like). Messages, fields, numbers, types, enums,
 * services, methods and options are all in a descriptor; comments are not. A change to a proto file that is meant
 * (a new field, a new method) writes the descriptors again from the new build, and says so.
 */
@Timeout(30)
class ProtoDescriptorsTest {

    private static final Path DESCRIPTORS = Path.of("src", "test", "resources", "descriptors");

    static Stream<Arguments> protoFiles() {
        return Stream.of(Arguments.of("master.proto", MasterProto.getDescriptor()), Arguments.of("state.proto", StateProto.getDescriptor()),
                Arguments.of("etcd_subset.proto", EtcdSubsetProto.getDescriptor()));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("protoFiles")
    void each_proto_file_compiles_to_the_descriptor_the_build_before_the_split_compiled(String name, FileDescriptor compiled) throws Exception {
        FileDescriptorProto before = FileDescriptorProto.parseFrom(Files.readAllBytes(DESCRIPTORS.resolve(name + ".pb")));
        // Equal as messages first, for a readable difference; equal as bytes too, since that is what travels.
        assertEquals(before, compiled.toProto(), name + " differs from the build before the split");
        assertEquals(before.toByteString(), compiled.toProto().toByteString(), name);
    }
}
