package io.mcctl.cli.bench;

import java.util.LinkedHashMap;
import java.util.Map;

/** What a benchmark ran on, recorded beside its figures. */
public final class MachineInfo {

    private MachineInfo() {
    }

    public static Map<String, Object> describe() {
        Map<String, Object> machine = new LinkedHashMap<>();
        machine.put("cores", Runtime.getRuntime().availableProcessors());
        machine.put("max_heap_mib", Runtime.getRuntime().maxMemory() >> 20);
        machine.put("os", System.getProperty("os.name") + " " + System.getProperty("os.version") + " " + System.getProperty("os.arch"));
        machine.put("java", System.getProperty("java.vm.name") + " " + System.getProperty("java.version"));
        machine.put("transparent_huge_pages", java.util.Objects.requireNonNullElse(io.mcctl.cli.HeapPages.kernelMode(), "none")); // the kernel's mode
        return machine;
    }
}
