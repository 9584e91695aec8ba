"""Reading untrusted input, for every reader: one hardened line decoder, bounded line splitting, bounded .zst."""
