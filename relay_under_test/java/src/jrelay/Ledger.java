package jrelay;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * The SQLite ledger. Every change is one autocommit statement, so each claim or outcome is
 * committed the moment the statement returns; no transaction is ever held across a network call.
 * Connections are pooled, one in use per thread at a time.
 */
final class Ledger {
    static final int BUSY_TIMEOUT_MS = 5000;

    static final class Row {
        final String guid, status, respCode, request, response;
        final long attempts;
        final double updatedAt;

        Row(ResultSet rs) throws SQLException {
            guid = rs.getString("guid");
            status = rs.getString("status");
            respCode = rs.getString("resp_code");
            request = rs.getString("request");
            response = rs.getString("response");
            attempts = rs.getLong("attempts");
            updatedAt = rs.getDouble("updated_at");
        }
    }

    interface Work<T> { T run(Connection c) throws SQLException; }

    private final String url;
    private final org.sqlite.JDBC driver = new org.sqlite.JDBC();
    private final ConcurrentLinkedQueue<Connection> idle = new ConcurrentLinkedQueue<>();

    Ledger(String path) {
        this.url = "jdbc:sqlite:" + path;
    }

    static double now() {
        return System.currentTimeMillis() / 1000.0;
    }

    private Connection open() throws SQLException {
        Connection c = driver.connect(url, new Properties());
        if (c == null) throw new SQLException("cannot open " + url);
        try (Statement st = c.createStatement()) {
            st.execute("PRAGMA busy_timeout=" + BUSY_TIMEOUT_MS);
            st.execute("PRAGMA synchronous=NORMAL");
            st.execute("PRAGMA temp_store=MEMORY");
            st.execute("PRAGMA cache_size=-512");
        } catch (SQLException e) {
            c.close();
            throw e;
        }
        return c;
    }

    /** Opens the ledger, switches it to WAL and creates the schema if it is not there yet. */
    void init() throws SQLException, InterruptedException {
        SQLException last = null;
        for (int round = 0; round < 20; round++) {
            try {
                with(c -> {
                    try (Statement st = c.createStatement()) {
                        st.execute("PRAGMA journal_mode=WAL");
                        st.execute("CREATE TABLE IF NOT EXISTS ledger ("
                                + " guid TEXT PRIMARY KEY,"
                                + " status TEXT NOT NULL,"
                                + " resp_code TEXT,"
                                + " request TEXT NOT NULL,"
                                + " response TEXT,"
                                + " attempts INTEGER NOT NULL,"
                                + " updated_at REAL NOT NULL)");
                        st.execute("CREATE INDEX IF NOT EXISTS ledger_status_age ON ledger (status, updated_at)");
                    }
                    return null;
                });
                return;
            } catch (SQLException e) { // e.g. busy while another process switches the journal mode
                last = e;
                Thread.sleep(100);
            }
        }
        throw last;
    }

    <T> T with(Work<T> work) throws SQLException {
        Connection c = idle.poll();
        if (c == null) c = open();
        try {
            return work.run(c);
        } finally {
            if (c.isClosed()) { /* dropped */ } else idle.offer(c);
        }
    }

    void close() {
        Connection c;
        while ((c = idle.poll()) != null) {
            try { c.close(); } catch (SQLException ignored) { }
        }
    }

    /** Claims a new GUID: true when this call inserted the SENT row (committed on return). */
    boolean claimNew(String guid, String request) throws SQLException {
        return with(c -> {
            try (PreparedStatement ps = c.prepareStatement(
                    "INSERT INTO ledger (guid, status, resp_code, request, response, attempts, updated_at)"
                    + " VALUES (?, 'SENT', NULL, ?, NULL, 1, ?) ON CONFLICT (guid) DO NOTHING")) {
                ps.setString(1, guid);
                ps.setString(2, request);
                ps.setDouble(3, now());
                return ps.executeUpdate() == 1;
            }
        });
    }

    /** Claims a FAILED row back to SENT with attempts + 1; maxAttempts < 0 means no limit. */
    boolean claimFailed(String guid, double maxAttempts) throws SQLException {
        return with(c -> {
            try (PreparedStatement ps = c.prepareStatement(
                    "UPDATE ledger SET status = 'SENT', attempts = attempts + 1, updated_at = ?"
                    + " WHERE guid = ? AND status = 'FAILED' AND (? < 0 OR attempts < ?)")) {
                ps.setDouble(1, now());
                ps.setString(2, guid);
                ps.setDouble(3, maxAttempts);
                ps.setDouble(4, maxAttempts);
                return ps.executeUpdate() == 1;
            }
        });
    }

    Row get(String guid) throws SQLException {
        return with(c -> {
            try (PreparedStatement ps = c.prepareStatement("SELECT * FROM ledger WHERE guid = ?")) {
                ps.setString(1, guid);
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() ? new Row(rs) : null;
                }
            }
        });
    }

    /** Records the outcome of a call on the row this process claimed (still SENT). */
    boolean record(String guid, String status, String respCode, String response) throws SQLException {
        return with(c -> {
            try (PreparedStatement ps = c.prepareStatement(
                    "UPDATE ledger SET status = ?, resp_code = ?, response = ?, updated_at = ?"
                    + " WHERE guid = ? AND status = 'SENT'")) {
                ps.setString(1, status);
                ps.setString(2, respCode);
                ps.setString(3, response);
                ps.setDouble(4, now());
                ps.setString(5, guid);
                return ps.executeUpdate() == 1;
            }
        });
    }

    /** Settles a row found by resolve, only if nobody changed it since it was read. */
    boolean settle(Row seen, String status, String respCode, String response) throws SQLException {
        return with(c -> {
            try (PreparedStatement ps = c.prepareStatement(
                    "UPDATE ledger SET status = ?, resp_code = ?, response = ?, updated_at = ?"
                    + " WHERE guid = ? AND status = ? AND attempts = ? AND updated_at = ?")) {
                ps.setString(1, status);
                ps.setString(2, respCode);
                ps.setString(3, response);
                ps.setDouble(4, now());
                ps.setString(5, seen.guid);
                ps.setString(6, seen.status);
                ps.setLong(7, seen.attempts);
                ps.setDouble(8, seen.updatedAt);
                return ps.executeUpdate() == 1;
            }
        });
    }

    List<Row> select(String where, Object... args) throws SQLException {
        return with(c -> {
            try (PreparedStatement ps = c.prepareStatement("SELECT * FROM ledger WHERE " + where + " ORDER BY updated_at")) {
                for (int k = 0; k < args.length; k++) ps.setObject(k + 1, args[k]);
                List<Row> rows = new ArrayList<>();
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) rows.add(new Row(rs));
                }
                return rows;
            }
        });
    }

    int purgeDone(double cutoff) throws SQLException {
        return with(c -> {
            try (PreparedStatement ps = c.prepareStatement(
                    "DELETE FROM ledger WHERE status = 'DONE' AND updated_at <= ?")) {
                ps.setDouble(1, cutoff);
                return ps.executeUpdate();
            }
        });
    }
}
