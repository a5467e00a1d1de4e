package io.mcctl.master.etcd;

/**
 * What a master publishes under {@code <cluster keys>/members/<address>} (under its lease, so it goes with the
 * master): {@code role=standby applied=120 log=120 epoch=7 time=<ms>}. Fields it does not know parse as 0.
 */
public record MemberStatus(String role, long applied, long log, long epoch, long timeMs) {

    public static MemberStatus parse(String value) {
        String role = "";
        long applied = 0, log = 0, epoch = 0, time = 0;
        for (String field : value.trim().split("\\s+")) {
            int eq = field.indexOf('=');
            if (eq <= 0) {
                continue;
            }
            String name = field.substring(0, eq);
            String text = field.substring(eq + 1);
            try {
                switch (name) {
                    case "role" -> role = text;
                    case "applied" -> applied = Long.parseLong(text);
                    case "log" -> log = Long.parseLong(text);
                    case "epoch" -> epoch = Long.parseLong(text);
                    case "time" -> time = Long.parseLong(text);
                    default -> { }
                }
            } catch (NumberFormatException e) {
                // a newer mcctl's field of another form: left at 0
            }
        }
        return new MemberStatus(role, applied, log, epoch, time);
    }
}
