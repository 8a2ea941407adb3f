import CALSA
import HushCore

#if canImport(Glibc)
import Glibc
#endif

/// The ALSA control interface an element lives on.
package enum ALSAControlInterface: String, Hashable, Sendable, CaseIterable {
    case card, mixer, pcm

    var raw: snd_ctl_elem_iface_t {
        switch self {
        case .card: SND_CTL_ELEM_IFACE_CARD
        case .mixer: SND_CTL_ELEM_IFACE_MIXER
        case .pcm: SND_CTL_ELEM_IFACE_PCM
        }
    }

    init?(raw: snd_ctl_elem_iface_t) {
        guard let match = Self.allCases.first(where: { $0.raw == raw }) else { return nil }
        self = match
    }
}

/// Names one control element: its name, interface and index ("Headphone Jack", CARD, 0).
public struct ALSAElementName: Hashable, Sendable, CustomStringConvertible {
    package var name: String
    package var interface: ALSAControlInterface
    package var index: UInt32

    package init(_ name: String, interface: ALSAControlInterface = .card, index: UInt32 = 0) {
        self.name = name
        self.interface = interface
        self.index = index
    }

    public var description: String {
        "'\(name)' (\(interface.rawValue.uppercased())" + (index == 0 ? ")" : ", index \(index))")
    }
}

/// An open control interface of one sound card (`snd_ctl_t`), the raw calls in one place.
final class ControlHandle {
    let handle: OpaquePointer
    /// "card 1 'Loopback'" for messages.
    let title: String

    /// Opens the control interface of `card`: an index ("0"), an id ("Loopback") or "hw:…".
    init(card: String, nonblocking: Bool) throws(HardwareError) {
        let spec = card.hasPrefix("hw:") ? String(card.dropFirst(3)) : card
        let index = snd_card_get_index(spec)
        guard index >= 0 else {
            throw HardwareError(
                operation: "find sound card",
                device: "'\(card)'",
                errno: -index,
                message: "no such card; cards present: \(ControlHandle.cards())"
            )
        }
        var handle: OpaquePointer?
        let result = snd_ctl_open(&handle, "hw:\(index)", nonblocking ? SND_CTL_NONBLOCK : 0)
        guard result == 0, let handle else {
            throw HardwareError(
                operation: "open the controls of",
                device: "card \(index)",
                errno: -result,
                message: ALSAErrors.message(result, permission: "add the hush user to the audio group")
            )
        }
        self.handle = handle
        var name: UnsafeMutablePointer<CChar>?
        let id = snd_card_get_name(index, &name) == 0 && name != nil ? String(cString: name!) : spec
        free(name)
        title = "card \(index) '\(id)'"
    }

    deinit { snd_ctl_close(handle) }

    /// The cards on this system: "0 'Loopback', 1 'Dummy'".
    static func cards() -> String {
        var names: [String] = []
        var index: Int32 = -1
        while snd_card_next(&index) == 0 && index >= 0 {
            var name: UnsafeMutablePointer<CChar>?
            if snd_card_get_name(index, &name) == 0, let name {
                names.append("\(index) '\(String(cString: name))'")
                free(name)
            }
        }
        return names.isEmpty ? "none" : names.joined(separator: ", ")
    }

    /// The element's numid, or nil when the card has no such element.
    func numid(of element: ALSAElementName) -> UInt32? {
        var id: OpaquePointer?
        var info: OpaquePointer?
        snd_ctl_elem_id_malloc(&id)
        snd_ctl_elem_info_malloc(&info)
        defer {
            snd_ctl_elem_id_free(id)
            snd_ctl_elem_info_free(info)
        }
        guard let id, let info else { return nil }
        snd_ctl_elem_id_set_interface(id, element.interface.raw)
        snd_ctl_elem_id_set_name(id, element.name)
        snd_ctl_elem_id_set_index(id, element.index)
        snd_ctl_elem_info_set_id(info, id)
        guard snd_ctl_elem_info(handle, info) == 0 else { return nil }
        return snd_ctl_elem_info_get_numid(info)
    }

    /// Every element's name on the card, for error messages.
    func elementNames() -> [String] {
        var list: OpaquePointer?
        snd_ctl_elem_list_malloc(&list)
        defer { snd_ctl_elem_list_free(list) }
        guard let list, snd_ctl_elem_list(handle, list) == 0 else { return [] }
        let count = snd_ctl_elem_list_get_count(list)
        guard count > 0, snd_ctl_elem_list_alloc_space(list, count) == 0 else { return [] }
        defer { snd_ctl_elem_list_free_space(list) }
        guard snd_ctl_elem_list(handle, list) == 0 else { return [] }
        return (0..<snd_ctl_elem_list_get_used(list)).map { String(cString: snd_ctl_elem_list_get_name(list, $0)) }
    }

    /// Reads the first value of a boolean or integer element as a Bool (non-zero = true).
    func readBoolean(numid: UInt32) throws(HardwareError) -> Bool {
        try withValue(numid: numid) { value throws(HardwareError) in
            let result = snd_ctl_elem_read(handle, value)
            guard result == 0 else {
                throw HardwareError(
                    operation: "read control \(numid) on",
                    device: title,
                    errno: -result,
                    message: ALSAErrors.message(result)
                )
            }
            return snd_ctl_elem_value_get_integer(value, 0) != 0
        }
    }

    /// Writes the first value of a boolean element.
    func writeBoolean(numid: UInt32, _ on: Bool) throws(HardwareError) {
        try withValue(numid: numid) { value throws(HardwareError) in
            snd_ctl_elem_value_set_boolean(value, 0, on ? 1 : 0)
            let result = snd_ctl_elem_write(handle, value)
            guard result >= 0 else {
                throw HardwareError(
                    operation: "write control \(numid) on",
                    device: title,
                    errno: -result,
                    message: ALSAErrors.message(result)
                )
            }
        }
    }

    private func withValue<T>(
        numid: UInt32,
        _ body: (OpaquePointer) throws(HardwareError) -> T
    ) throws(HardwareError)
        -> T
    {
        var value: OpaquePointer?
        var id: OpaquePointer?
        snd_ctl_elem_value_malloc(&value)
        snd_ctl_elem_id_malloc(&id)
        defer {
            snd_ctl_elem_value_free(value)
            snd_ctl_elem_id_free(id)
        }
        guard let value, let id else {
            throw HardwareError(
                operation: "allocate a control value for",
                device: title,
                errno: ENOMEM,
                message: "out of memory"
            )
        }
        snd_ctl_elem_id_set_numid(id, numid)
        snd_ctl_elem_value_set_id(value, id)
        return try body(value)
    }

    /// The file descriptor to poll for control events.
    func pollDescriptor() -> Int32? {
        var entry = pollfd()
        guard snd_ctl_poll_descriptors(handle, &entry, 1) == 1 else { return nil }
        return entry.fd
    }
}

enum ALSAErrors {
    /// alsa-lib's negative error code as a sentence, with advice for permission errors.
    static func message(_ result: Int32, permission: String = "add the hush user to the audio group") -> String {
        switch -result {
        case EACCES, EPERM: "permission denied: \(permission)"
        case ENODEV: "the sound card is gone"
        default: String(cString: snd_strerror(result))
        }
    }
}
