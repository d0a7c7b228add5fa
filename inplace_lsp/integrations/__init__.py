"""The runtime detector inside training frameworks (each module imports its framework)."""
