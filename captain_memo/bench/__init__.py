"""`captain-memo bench`: synthetic stores at scale and the latency, memory and size figures measured on them."""
