package jrelay;

import java.nio.file.Files;
import java.nio.file.Path;

/** relay serve | resolve --min-age S | reprocess --max-attempts N | purge --retention S */
public final class Main {
    private Main() {}

    public static void main(String[] args) {
        // One connection per account call, and never a silent second POST.
        System.setProperty("http.keepAlive", "false");
        System.setProperty("sun.net.http.retryPost", "false");
        int status;
        try {
            status = run(args);
        } catch (Usage e) {
            System.err.println("relay: " + e.getMessage());
            status = 2;
        } catch (Exception e) {
            System.err.println("relay: cannot run: " + e);
            status = 1;
        }
        if (status != 0 || args.length == 0 || !"serve".equals(args[0])) {
            System.exit(status);
        }
    }

    static final class Usage extends Exception {
        private static final long serialVersionUID = 1L;
        Usage(String m) { super(m); }
    }

    private static int run(String[] args) throws Exception {
        if (args.length == 0) throw new Usage("usage: relay serve|resolve|reprocess|purge [--flag value]");
        String tmp = System.getProperty("java.io.tmpdir");
        if (tmp != null) {
            try { Files.createDirectories(Path.of(tmp)); } catch (Exception ignored) { }
        }
        String ledgerPath = env("LEDGER_PATH", null);
        Ledger ledger = new Ledger(ledgerPath);
        String command = args[0];
        switch (command) {
            case "serve": {
                String host = env("RELAY_HOST", "127.0.0.1");
                int port = Integer.parseInt(env("RELAY_PORT", null));
                ledger.init();
                new Serve(ledger, new Relay(ledger, account())).start(host, port);
                System.err.println("relay: serving on " + host + ":" + port);
                return 0;
            }
            case "resolve": {
                double minAge = flag(args, "--min-age");
                ledger.init();
                try { return Batch.resolve(ledger, account(), minAge); } finally { ledger.close(); }
            }
            case "reprocess": {
                double maxAttempts = flag(args, "--max-attempts");
                ledger.init();
                try { return Batch.reprocess(ledger, new Relay(ledger, account()), maxAttempts); } finally { ledger.close(); }
            }
            case "purge": {
                double retention = flag(args, "--retention");
                ledger.init();
                try { return Batch.purge(ledger, retention); } finally { ledger.close(); }
            }
            default:
                throw new Usage("unknown command " + command);
        }
    }

    private static Account account() throws Usage {
        String ms = env("ACCOUNT_TIMEOUT_MS", "2000");
        int timeout;
        try {
            timeout = (int) Math.round(Double.parseDouble(ms));
        } catch (NumberFormatException e) {
            throw new Usage("ACCOUNT_TIMEOUT_MS is not a number: " + ms);
        }
        return new Account(env("ACCOUNT_URL", null), timeout);
    }

    private static String env(String name, String fallback) throws Usage {
        String v = System.getenv(name);
        if (v == null || v.isEmpty()) {
            if (fallback == null) throw new Usage(name + " is not set");
            return fallback;
        }
        return v;
    }

    /** The value of --name V or --name=V. */
    private static double flag(String[] args, String name) throws Usage {
        for (int k = 1; k < args.length; k++) {
            String v = null;
            if (args[k].equals(name) && k + 1 < args.length) v = args[k + 1];
            else if (args[k].startsWith(name + "=")) v = args[k].substring(name.length() + 1);
            if (v != null) {
                try {
                    double d = Double.parseDouble(v);
                    if (Double.isNaN(d)) throw new NumberFormatException();
                    return d;
                } catch (NumberFormatException e) {
                    throw new Usage(name + " needs a number, got " + v);
                }
            }
        }
        throw new Usage("missing " + name + " VALUE");
    }
}
