import PostgresNIO

extension Worker {
  /// Listens for wake-ups of this queue; reconnects after an error until cancelled.
  func listen(ringing doorbell: Doorbell) async {
    var outage = Outage(
      what: "listening for wake-ups", cap: queue.outageBackoff, logger: logger)
    while !Task.isCancelled {
      do {
        try await queue.client.withConnection { connection in
          do {
            try await connection.listen(on: SQLFragment.wakeChannel) { notifications in
              doorbell.ring()  // anything due meanwhile is found by the next claim
              outage.ended()
              for try await notification in notifications
              where notification.payload == name {
                doorbell.ring()
              }
            }
          } catch {
            // A standby refuses LISTEN ("during recovery"): its connection is closed, as every
            // call closes one that met a read-only node, so that the next one goes where the
            // service's name, address or proxy points now.
            if PostgresDelayedPreemptiveQueue<Value>.isReadOnlyRefusal(error) {
              try? await connection.close()
            }
            throw error
          }
        }
      } catch {
        if Task.isCancelled { return }
        let wait = outage.failed(queue.failure(of: "listen", error), defects: metrics)
        do {
          try await Task.sleep(for: max(wait, queue.safetyPoll))
        } catch {
          return
        }
      }
    }
  }
}
