"""Henry Okafor's relay for the payment-systems course."""
