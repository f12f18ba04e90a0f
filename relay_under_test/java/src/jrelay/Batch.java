package jrelay;

import java.sql.SQLException;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/** The batch commands: resolve, reprocess, purge. Each returns the process exit status. */
final class Batch {
    static final int PARALLEL = 8;

    private Batch() {}

    /** resolve --min-age S: ask the query API about UNKNOWN and SENT rows at least S seconds old. */
    static int resolve(Ledger ledger, Account account, double minAge) throws SQLException, InterruptedException {
        List<Ledger.Row> rows = ledger.select("status IN ('UNKNOWN', 'SENT') AND updated_at <= ?", Ledger.now() - minAge);
        AtomicInteger done = new AtomicInteger(), failed = new AtomicInteger(), left = new AtomicInteger();
        forEach(rows, row -> {
            Account.Query q = account.query(row.guid);
            if (q.found) {
                String response = Relay.answer(row.guid, q.code, "settled from the account system's query API");
                if (ledger.settle(row, "DONE", q.code, response)) done.incrementAndGet(); else left.incrementAndGet();
            } else if (!q.failed) {
                if (ledger.settle(row, "FAILED", "E902", null)) failed.incrementAndGet(); else left.incrementAndGet();
            } else {
                left.incrementAndGet();
            }
        });
        System.err.printf("resolve: %d rows: %d DONE, %d FAILED, %d left as they were%n",
                rows.size(), done.get(), failed.get(), left.get());
        return 0;
    }

    /** reprocess --max-attempts N: resend FAILED rows with attempts < N, each claimed first. */
    static int reprocess(Ledger ledger, Relay relay, double maxAttempts) throws SQLException, InterruptedException {
        List<Ledger.Row> rows = ledger.select("status = 'FAILED' AND attempts < ?", maxAttempts);
        AtomicInteger sent = new AtomicInteger();
        forEach(rows, row -> {
            TransferRequest req;
            try {
                req = TransferRequest.parse(row.request);
            } catch (TransferRequest.Invalid e) {
                System.err.println("reprocess: " + row.guid + ": stored request unreadable, left as it is");
                return;
            }
            if (ledger.claimFailed(row.guid, maxAttempts)) {
                relay.send(req);
                sent.incrementAndGet();
            }
        });
        System.err.printf("reprocess: %d FAILED rows under %s attempts, %d resent%n", rows.size(), maxAttempts, sent.get());
        return 0;
    }

    /** purge --retention S: delete DONE rows at least S seconds old. */
    static int purge(Ledger ledger, double retention) throws SQLException {
        int n = ledger.purgeDone(Ledger.now() - retention);
        System.err.printf("purge: %d DONE rows deleted%n", n);
        return 0;
    }

    interface RowWork { void run(Ledger.Row row) throws SQLException; }

    private static void forEach(List<Ledger.Row> rows, RowWork work) throws InterruptedException {
        if (rows.isEmpty()) return;
        ExecutorService pool = Executors.newFixedThreadPool(Math.min(PARALLEL, rows.size()));
        for (Ledger.Row row : rows) {
            pool.execute(() -> {
                try {
                    work.run(row);
                } catch (SQLException | RuntimeException e) {
                    System.err.println("batch: " + row.guid + ": " + e + " (left as it is)");
                }
            });
        }
        pool.shutdown();
        pool.awaitTermination(1, TimeUnit.DAYS);
    }
}
