"""Starts N linked Bumble virtual LE controllers, each an H4-over-TCP server on 127.0.0.1.

Usage: controllers.py N [--debug] [--enhanced-connection-complete]
Prints "READY port1 port2 ..." on stdout once every controller listens, then runs until killed.
Ports are chosen by the kernel (bind to port 0) and retried on collision.
HCI_Reset is made to drop LE state (Bumble's own reset keeps it), so each host starts clean.
LE ACL data is stamped with the address each connection was made with, so hosts that use their public address
(the Linux kernel's default, as in scripts/with-bluez-vm.sh) exchange data too; Bumble's LocalLink would stamp it
with the sending controller's random address, and the peer controller would drop it as "no connection".
--enhanced-connection-complete: report connections with LE Enhanced Connection Complete (0x0A) to a host that
enabled it in its LE event mask, as real controllers do (Bumble only sends 0x01). The Linux kernel waits for 0x0A
when the controller supports extended advertising; without it, its next LE connection waits about 20 s for the
previous one's create-connection command to time out (scripts/with-bluez-vm.sh and test-bluez-vm.sh pass it).
"""
import asyncio
import logging
import socket
import sys

from bumble import core, hci, ll
from bumble.controller import Controller
from bumble.link import LocalLink
from bumble.transport import open_transport

from rig_watchdog import exit_with_parent


class ResettingController(Controller):
    def on_hci_reset_command(self, command):
        for connection in list(self.le_connections.values()):
            try:
                connection.send_ll_control_pdu(
                    ll.TerminateInd(hci.HCI_ErrorCode.REMOTE_USER_TERMINATED_CONNECTION_ERROR))
            except Exception:
                pass
        self.le_connections.clear()
        try:
            self.le_legacy_advertiser.stop()
        except Exception:
            pass
        for advertising_set in self.advertising_sets.values():
            try:
                advertising_set.stop()
            except Exception:
                pass
        self.advertising_sets.clear()
        self.le_scan_enable = False
        self.pending_le_connection = None
        return super().on_hci_reset_command(command)


class ConnectionAddressLink(LocalLink):
    def send_acl_data(self, sender_controller, destination_address, transport, data):
        if transport == core.PhysicalTransport.LE:
            connection = sender_controller.le_connections.get(destination_address)
            destination = self.find_le_controller(destination_address)
            if connection is not None and destination is not None:
                source_address = connection.self_address
                asyncio.get_running_loop().call_soon(
                    lambda: destination.on_link_acl_data(source_address, transport, data))
                return
        super().send_acl_data(sender_controller, destination_address, transport, data)


class EnhancedConnectionCompleteController(ResettingController):
    def send_hci_packet(self, packet):
        if isinstance(packet, hci.HCI_LE_Connection_Complete_Event) and self.le_event_mask & (1 << 9):
            packet = hci.HCI_LE_Enhanced_Connection_Complete_Event(
                status=packet.status, connection_handle=packet.connection_handle, role=packet.role,
                peer_address_type=packet.peer_address_type, peer_address=packet.peer_address,
                local_resolvable_private_address=hci.Address.ANY_RANDOM,
                peer_resolvable_private_address=hci.Address.ANY_RANDOM,
                connection_interval=packet.connection_interval, peripheral_latency=packet.peripheral_latency,
                supervision_timeout=packet.supervision_timeout,
                central_clock_accuracy=packet.central_clock_accuracy)
        super().send_hci_packet(packet)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


async def main(count, controller_class, le_acl_length=None):
    exit_with_parent()
    link = ConnectionAddressLink()
    keep = []
    ports = []
    for index in range(count):
        for _ in range(20):
            port = free_port()
            try:
                transport = await open_transport(f'tcp-server:127.0.0.1:{port}')
                break
            except OSError:
                continue
        else:
            raise SystemExit('no free port')
        controller = controller_class(
            f'C{index}', host_source=transport.source, host_sink=transport.sink, link=link,
            public_address=f'F0:F1:F2:F3:F4:{index:02X}')
        if le_acl_length:
            # Bumble's default LE ACL buffer is 27 bytes (the kernel then uses an L2CAP MPS of 23).
            controller.le_acl_data_packet_length = le_acl_length
        keep.append((transport, controller))
        ports.append(port)
    print('READY', *ports, flush=True)
    await asyncio.get_running_loop().create_future()


if __name__ == '__main__':
    arguments = sys.argv[1:]
    logging.basicConfig(level=logging.DEBUG if '--debug' in arguments else logging.ERROR)
    numbers = [int(a) for a in arguments if a.isdigit()]
    # --le-acl-length=N: the controllers' LE ACL buffer size (default Bumble's 27; up to 251).
    acl = next((int(a.split('=', 1)[1]) for a in arguments if a.startswith('--le-acl-length=')), None)
    asyncio.run(main(numbers[0] if numbers else 2,
                     EnhancedConnectionCompleteController if '--enhanced-connection-complete' in arguments
                     else ResettingController, acl))
