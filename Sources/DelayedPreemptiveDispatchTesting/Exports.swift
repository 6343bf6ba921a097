// Re-exports the main module, so that a test that imports only this module can use the queue,
// the actor and the adapters with `ManualClock`, as the README's "Testing without sleeping"
// snippet does.
@_exported import DelayedPreemptiveDispatch
