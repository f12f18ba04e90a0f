"""relay_base: the course's starting point. It forwards every request it receives and answers
what the account system answered, with no duplicate protection: a resend is a second debit."""
