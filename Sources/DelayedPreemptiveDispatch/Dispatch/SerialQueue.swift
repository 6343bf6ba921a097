import Dispatch

/// Makes the serial queue an instance runs its work on: named `label`, of `qos`, and targeting
/// `target`, or by default the global concurrent queue of that QoS.
///
/// The default matters: a serial queue created with no target is an overcommit queue in
/// libdispatch, which gets a thread of its own whenever it has work, so thousands of instances
/// firing together spawn hundreds of threads. A serial queue that targets a global queue shares
/// that queue's pool, sized to the machine's cores.
func makeSerialQueue(label: String, qos: DispatchQoS, target: DispatchQueue?) -> DispatchQueue {
  DispatchQueue(label: label, qos: qos, target: target ?? globalQueue(qos: qos))
}

/// The global concurrent queue of `qos`; `.unspecified` is the default QoS's.
func globalQueue(qos: DispatchQoS) -> DispatchQueue {
  .global(qos: qos.qosClass == .unspecified ? .default : qos.qosClass)
}
