"""Training wiring shared by every task: checkpoint I/O, callbacks and the LightningCLI entry point."""
