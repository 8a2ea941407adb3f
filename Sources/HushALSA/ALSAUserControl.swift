import CALSA
import HushCore

#if canImport(Glibc)
import Glibc
#endif

/// A boolean user control that hush adds to a card, so stock tools (`amixer`, `alsamixer`) see hush's state.
///
/// The virtual board also uses it to stand in for a codec's "Headphone Jack". The control stays on the card until
/// ``remove()``; adding one that already exists replaces it (a restarted hushd takes over its old controls).
package final class ALSAUserControl {
    package let element: ALSAElementName
    private let control: ControlHandle
    private let numid: UInt32

    /// Adds the control with `count` values (channels: a stereo switch has 2), each set to `initial`.
    ///
    /// The kernel locks a new user control to the handle that added it: only this object can write it (a codec's
    /// "Headphone Jack" is read-only to others too). `writableByOthers` gives that lock up, as for a codec's mixer
    /// switch that other programs — hushd's routes, amixer — set.
    package init(
        card: String,
        element: ALSAElementName,
        initial: Bool = false,
        count: Int = 1,
        writableByOthers: Bool = false
    ) throws(HardwareError) {
        self.element = element
        control = try ControlHandle(card: card, nonblocking: false)
        var id: OpaquePointer?
        snd_ctl_elem_id_malloc(&id)
        defer { snd_ctl_elem_id_free(id) }
        guard let id else {
            throw HardwareError(
                operation: "allocate a control id for",
                device: control.title,
                errno: ENOMEM,
                message: "out of memory"
            )
        }
        snd_ctl_elem_id_set_interface(id, element.interface.raw)
        snd_ctl_elem_id_set_name(id, element.name)
        snd_ctl_elem_id_set_index(id, element.index)
        let values = UInt32(max(count, 1))
        var result = snd_ctl_elem_add_boolean(control.handle, id, values)
        if result == -EBUSY {
            _ = snd_ctl_elem_remove(control.handle, id)
            result = snd_ctl_elem_add_boolean(control.handle, id, values)
        }
        guard result == 0, let numid = control.numid(of: element) else {
            throw HardwareError(
                operation: "add control \(element) to",
                device: control.title,
                errno: -result,
                message: ALSAErrors.message(result)
            )
        }
        self.numid = numid
        try control.writeInteger(numid: numid, initial ? 1 : 0, channels: Int(values))
        if writableByOthers {
            let unlocked = control.lockElement(numid: numid, lock: false)
            guard unlocked == 0 else {
                throw HardwareError(
                    operation: "unlock control \(element) on",
                    device: control.title,
                    errno: -unlocked,
                    message: ALSAErrors.message(unlocked)
                )
            }
        }
    }

    /// Sets the control's value; subscribers see a value event.
    package func set(_ on: Bool) throws(HardwareError) { try control.writeBoolean(numid: numid, on) }

    /// The control's value.
    package func get() throws(HardwareError) -> Bool { try control.readBoolean(numid: numid) }

    /// Removes the control from the card.
    package func remove() throws(HardwareError) {
        var id: OpaquePointer?
        snd_ctl_elem_id_malloc(&id)
        defer { snd_ctl_elem_id_free(id) }
        guard let id else { return }
        snd_ctl_elem_id_set_numid(id, numid)
        let result = snd_ctl_elem_remove(control.handle, id)
        guard result == 0 else {
            throw HardwareError(
                operation: "remove control \(element) from",
                device: control.title,
                errno: -result,
                message: ALSAErrors.message(result)
            )
        }
    }
}
