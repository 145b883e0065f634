"""execution: did the run execute and finish, by its execution record."""
