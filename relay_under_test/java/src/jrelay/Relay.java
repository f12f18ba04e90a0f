package jrelay;

import java.sql.SQLException;

/** What the relay does with a GUID, and how it sends a claimed row and records the outcome. */
final class Relay {
    private final Ledger ledger;
    private final Account account;

    Relay(Ledger ledger, Account account) {
        this.ledger = ledger;
        this.account = account;
    }

    static String answer(String guid, String code, String message) {
        return Json.object("guid", guid, "code", code, "message", message);
    }

    /** The answer to a well-formed channel request (HTTP 200 body). */
    String handle(TransferRequest req, String body) throws SQLException {
        for (int round = 0; round < 5; round++) {
            if (ledger.claimNew(req.guid, body)) return send(req);
            Ledger.Row row = ledger.get(req.guid);
            if (row == null) continue; // purged in between: claim again
            TransferRequest saved;
            try {
                saved = TransferRequest.parse(row.request);
            } catch (TransferRequest.Invalid e) {
                saved = null;
            }
            if (saved == null || !saved.sameAs(req)) {
                return answer(req.guid, "E904", "this GUID was already used for a different request");
            }
            switch (row.status) {
                case "DONE":
                    if (row.response != null) return row.response;
                    return answer(req.guid, row.respCode, null);
                case "UNKNOWN":
                    return answer(req.guid, "E901", "sent before, outcome unknown");
                case "FAILED":
                    if (ledger.claimFailed(req.guid, -1)) return send(req);
                    continue; // somebody else claimed or changed it: look again
                default: // SENT, RECEIVED
                    return answer(req.guid, "E903", "this GUID is being sent right now");
            }
        }
        return answer(req.guid, "E903", "this GUID is being sent right now");
    }

    /** Sends a row this process has just claimed (SENT, committed) and records the outcome. */
    String send(TransferRequest req) throws SQLException {
        Account.Outcome o;
        try {
            o = account.transfer(req);
        } catch (Throwable t) {
            o = new Account.Outcome(Account.Kind.UNKNOWN, null, "relay error: " + t);
        }
        String status, code, response, answer;
        switch (o.kind) {
            case DONE:
                status = "DONE";
                code = o.code;
                answer = answer(req.guid, o.code, o.message);
                response = answer;
                break;
            case FAILED:
                status = "FAILED";
                code = "E902";
                answer = answer(req.guid, "E902", "not sent: " + o.message);
                response = null;
                break;
            default:
                status = "UNKNOWN";
                code = "E901";
                answer = answer(req.guid, "E901", "sent, no answer: " + o.message);
                response = null;
        }
        SQLException last = null;
        for (int round = 0; round < 3; round++) {
            try {
                if (!ledger.record(req.guid, status, code, response)) {
                    System.err.println("relay: " + req.guid + " was no longer SENT when its outcome " + code + " came");
                }
                return answer;
            } catch (SQLException e) {
                last = e;
            }
        }
        throw last;
    }
}
