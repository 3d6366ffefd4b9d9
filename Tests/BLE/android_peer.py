"""A Bumble host that speaks only the BLE formats of Android's Nearby Connections, as the public sources describe
them (written from docs/BLE-ANDROID.md's list of sources and google/nearby's .proto/.h/.m descriptions, not from
swift-nearby's Swift code): the advertisement header with GATT advertisement slots, the Weave GATT socket, the
length-framed L2CAP channel with its REQUEST_DATA_CONNECTION/READY handshake, and the socket layer (introduction,
hash-prefixed data packets, acknowledgements on L2CAP).

It does not speak Nearby Connections itself: it relays the Nearby stream ([u32 length][frame]...) between the BLE
socket and a TCP socket, where a swift-nearby engine on Wi-Fi LAN plays the Android app's Nearby Connections.

Usage:
  android_peer.py server PORT ADDRESS SERVICE_ID ENDPOINT_ID INFO_HEX BRIDGE_PORT fast|extended|header [l2cap]
      Advertises the endpoint like an Android advertiser (fast form on legacy advertising; the regular form on an
      extended advertisement; or the regular form in GATT slot 0 behind an advertisement header on legacy
      advertising), serves the Weave socket on 0xFEF3 and, with `l2cap`, an L2CAP channel whose PSM the regular form
      and the header carry. For each socket the client opens, connects to 127.0.0.1:BRIDGE_PORT and relays.
      Prints "READY <address> <psm>", then "SOCKET gatt|l2cap" when one is established and "CLOSED".
  android_peer.py client PORT ADDRESS SERVICE_ID gatt|l2cap
      Listens on a TCP port and prints "READY <port>"; once a TCP client connected, scans for an advertisement of
      SERVICE_ID (fast, regular, or a header whose slots it reads over GATT), connects over the path named (l2cap
      needs a PSM in the advertisement), introduces itself and relays. Prints "FOUND <address> <psm>",
      "SOCKET gatt|l2cap", "CLOSED".
"""
import asyncio
import hashlib
import os
import struct
import sys

from bumble.core import AdvertisingData, UUID
from bumble.device import AdvertisingEventProperties, AdvertisingParameters, Device, Peer
from bumble.gatt import Characteristic, CharacteristicValue, Service
from bumble.hci import Address, OwnAddressType
from bumble.l2cap import LeCreditBasedChannelSpec
from bumble.transport import open_transport

from rig_watchdog import exit_with_parent

COPRESENCE = 0xFEF3
WEAVE_TO_SERVER = UUID('00000100-0004-1000-8000-001A11000101')
WEAVE_TO_CLIENT = UUID('00000100-0004-1000-8000-001A11000102')


def slot_uuid(slot):
    return UUID(f'00000000-0000-3000-8000-{slot:012X}')


def sha256(data):
    return hashlib.sha256(data).digest()


# --- Protobuf, just the varint and length-delimited fields SocketControlFrame needs -------------------------------

def varint(value):
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def field_varint(number, value):
    return varint(number << 3) + varint(value)


def field_bytes(number, data):
    return varint(number << 3 | 2) + varint(len(data)) + data


def parse_fields(data):
    fields, offset = {}, 0
    while offset < len(data):
        key, offset = read_varint(data, offset)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, offset = read_varint(data, offset)
        elif wire == 2:
            length, offset = read_varint(data, offset)
            value, offset = data[offset:offset + length], offset + length
            if offset > len(data):
                raise ValueError('truncated field')
        else:
            raise ValueError(f'wire type {wire}')
        fields[number] = value
    return fields


def read_varint(data, offset):
    result = shift = 0
    while True:
        if offset >= len(data):
            raise ValueError('truncated varint')
        byte = data[offset]
        offset += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return result, offset


# --- The socket layer (ble_frames.proto: INTRODUCTION=1, DISCONNECTION=2, PACKET_ACKNOWLEDGEMENT=3) ---------------

CONTROL = b'\x00\x00\x00'


def introduction(service_hash):
    return CONTROL + field_varint(1, 1) + field_bytes(2, field_bytes(1, service_hash) + field_varint(2, 2))


def acknowledgement(service_hash, size):
    return CONTROL + field_varint(1, 3) + field_bytes(4, field_bytes(1, service_hash) + field_varint(2, size))


def parse_control(packet):
    fields = parse_fields(packet[3:])
    kind = fields.get(1)
    inner = parse_fields(fields.get({1: 2, 2: 3, 3: 4}.get(kind, 0), b''))
    return kind, inner


# --- Advertisements (connections-level inside medium-level; ble_advertisement.cc, ble_advertisement_header.cc) -----

def connections_advertisement(fast, pcp, service_hash, endpoint_id, info):
    version_pcp = bytes([1 << 5 | pcp])
    if fast:
        return version_pcp + endpoint_id + bytes([len(info)]) + info
    return version_pcp + service_hash + endpoint_id + bytes([len(info)]) + info + bytes(6) + b'\x00' + b'\x00'


def medium_advertisement(fast, service_hash, data, psm):
    token = sha256(str(int.from_bytes(os.urandom(4), 'big')).encode())[:2]
    if fast:
        return bytes([2 << 5 | 2 << 2 | 1 << 1, len(data)]) + data + token
    out = bytes([2 << 5 | 2 << 2]) + service_hash + struct.pack('>I', len(data)) + data + token
    if psm:
        out += b'\x01' + struct.pack('>H', psm)
    return out


def murmur3_x64_128_low(data):
    # MurmurHash3_x64_128 with seed 0; returns h1 (the low 64-bit word).
    c1, c2, mask = 0x87C37B91114253D5, 0x4CF5AD432745937F, (1 << 64) - 1

    def rotl(x, r):
        return ((x << r) | (x >> (64 - r))) & mask

    def fmix(k):
        k ^= k >> 33
        k = (k * 0xFF51AFD7ED558CCD) & mask
        k ^= k >> 33
        k = (k * 0xC4CEB9FE1A85EC53) & mask
        return k ^ (k >> 33)

    h1 = h2 = 0
    blocks = len(data) // 16
    for i in range(blocks):
        k1, k2 = struct.unpack_from('<QQ', data, i * 16)
        k1 = (rotl((k1 * c1) & mask, 31) * c2) & mask
        h1 = (((rotl(h1 ^ k1, 27) + h2) & mask) * 5 + 0x52DCE729) & mask
        k2 = (rotl((k2 * c2) & mask, 33) * c1) & mask
        h2 = (((rotl(h2 ^ k2, 31) + h1) & mask) * 5 + 0x38495AB5) & mask
    tail = data[blocks * 16:]
    k1 = k2 = 0
    for i in range(len(tail) - 1, 7, -1):
        k2 ^= tail[i] << ((i - 8) * 8)
    if len(tail) > 8:
        h2 ^= (rotl((k2 * c2) & mask, 33) * c1) & mask
    for i in range(min(len(tail), 8) - 1, -1, -1):
        k1 ^= tail[i] << (i * 8)
    if tail:
        h1 ^= (rotl((k1 * c1) & mask, 31) * c2) & mask
    h1 ^= len(data)
    h2 ^= len(data)
    h1 = (h1 + h2) & mask
    h2 = (h2 + h1) & mask
    h1, h2 = fmix(h1), fmix(h2)
    h1 = (h1 + h2) & mask
    return h1


def bloom_positions(element):
    low = murmur3_x64_128_low(element)
    h1, h2 = low & 0xFFFFFFFF, low >> 32
    positions = []
    for i in range(1, 6):
        combined = (h1 + i * h2) & 0xFFFFFFFF
        if combined & 0x80000000:
            combined = ~combined & 0xFFFFFFFF
        positions.append(combined % 80)
    return positions


def advertisement_header(service_id, slots, psm):
    bloom = bytearray(10)
    dummy = os.urandom(128)
    for element in (service_id.encode(), dummy):
        for position in bloom_positions(element):
            bloom[position // 8] |= 1 << (position % 8)
    advertisement_hash = sha256(dummy)[:4]
    for slot in slots:
        advertisement_hash = sha256(advertisement_hash + slot)[:4]
    return bytes([2 << 5 | len(slots)]) + bytes(bloom) + advertisement_hash + struct.pack('>H', psm)


def bloom_contains(bloom, service_id):
    return all(bloom[p // 8] & (1 << (p % 8)) for p in bloom_positions(service_id.encode()))


def service_data_ad(data):
    return bytes([2, 0x01, 0x06, len(data) + 3, 0x16, COPRESENCE & 0xFF, COPRESENCE >> 8]) + data


# --- Weave (GNSWeavePacket.m: control 1CCCNNNN, data 0CCCFL00) ------------------------------------------------------

class Weave:
    """One Weave connection's counters, fragmentation and reassembly."""

    def __init__(self):
        self.send_counter = 0
        self.receive_counter = 0
        self.packet_size = 20
        self.incoming = None

    def next_header(self, bits):
        header = bits | self.send_counter << 4
        self.send_counter = (self.send_counter + 1) % 8
        return header

    def request(self, size):
        return bytes([self.next_header(0x80)]) + struct.pack('>HHH', 1, 1, size)

    def confirm(self, size):
        return bytes([self.next_header(0x81)]) + struct.pack('>HH', 1, size)

    def packets(self, message):
        out, offset = [], 0
        while True:
            chunk = message[offset:offset + self.packet_size - 1]
            first, last = offset == 0, offset + len(chunk) >= len(message)
            out.append(bytes([self.next_header((0x08 if first else 0) | (0x04 if last else 0))]) + chunk)
            offset += len(chunk)
            if last:
                return out

    def receive(self, packet):
        """Returns ('request', size) / ('confirm', size) / ('message', bytes) / ('error', None) / None."""
        header = packet[0]
        counter = header >> 4 & 7
        if counter != self.receive_counter:
            raise ValueError(f'Weave counter {counter}, expected {self.receive_counter}')
        self.receive_counter = (self.receive_counter + 1) % 8
        if header & 0x80:
            command = header & 0x0F
            if command == 0:
                return 'request', struct.unpack('>HHH', packet[1:7])[2]
            if command == 1:
                return 'confirm', struct.unpack('>HH', packet[1:5])[1]
            return 'error', None
        if header & 0x08:
            if self.incoming is not None:
                raise ValueError('Weave message began inside another')
            self.incoming = bytearray()
        elif self.incoming is None:
            raise ValueError('Weave continuation without a first packet')
        self.incoming += packet[1:]
        if header & 0x04:
            message, self.incoming = bytes(self.incoming), None
            return 'message', message
        return None


# --- The relay between a BLE socket and TCP ---------------------------------------------------------------------------

class Socket:
    """The socket layer over one data path. `send_message` writes one path message; `on_message` is fed each one."""

    def __init__(self, path, service_hash, send_message, is_server):
        self.path = path
        self.service_hash = service_hash
        self.send_message = send_message
        self.is_server = is_server
        self.established = asyncio.Event()
        self.closed = asyncio.Event()
        self.writer = None
        self.pending = bytearray()
        self.data_requested = not is_server or path == 'gatt'

    async def on_message(self, message):
        if not self.established.is_set():
            if self.is_server:
                if self.path == 'l2cap' and not self.data_requested:
                    if message != b'\x03':
                        raise ValueError(f'expected REQUEST_DATA_CONNECTION, got {message.hex()}')
                    self.data_requested = True
                    await self.send_message(b'\x17')
                    return
                if message != introduction(self.service_hash):
                    raise ValueError(f'expected the introduction, got {message.hex()}')
                self.established.set()
                print('SOCKET', self.path, flush=True)
                return
            if message != b'\x17':
                raise ValueError(f'expected READY, got {message.hex()}')
            await self.send_message(introduction(self.service_hash))
            self.established.set()
            print('SOCKET', self.path, flush=True)
            return
        prefix = message[:3]
        if prefix == CONTROL:
            kind, _ = parse_control(message)
            if kind == 2:
                self.closed.set()
            return
        if prefix != self.service_hash:
            raise ValueError(f'data packet for hash {prefix.hex()}')
        if self.path == 'l2cap':
            await self.send_message(acknowledgement(self.service_hash, len(message)))
        self.pending += message[3:]
        if self.writer is not None:
            self.writer.write(bytes(self.pending))
            self.pending.clear()
            await self.writer.drain()

    async def relay_from_tcp(self, reader, writer):
        """Nearby frames from TCP, each as one data packet (hash, length, frame), as Android writes them."""
        self.writer = writer
        if self.pending:
            writer.write(bytes(self.pending))
            self.pending.clear()
        try:
            while True:
                length = await reader.readexactly(4)
                frame = await reader.readexactly(struct.unpack('>I', length)[0])
                await self.send_message(self.service_hash + length + frame)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        self.closed.set()


class L2capPath:
    """Android's L2CAP framing: every message is [u32 BE length][message]."""

    def __init__(self, channel):
        self.channel = channel
        self.buffer = bytearray()
        self.socket = None

    async def send(self, message):
        self.channel.write(struct.pack('>I', len(message)) + message)
        await self.channel.drain()

    def attach(self, socket, loop):
        self.socket = socket
        queue = asyncio.Queue()

        def on_sdu(sdu):
            queue.put_nowait(bytes(sdu))

        self.channel.sink = on_sdu
        self.channel.on('close', lambda: queue.put_nowait(None))

        async def pump():
            try:
                while True:
                    sdu = await queue.get()
                    if sdu is None:
                        break
                    self.buffer += sdu
                    while len(self.buffer) >= 4:
                        length = struct.unpack('>I', self.buffer[:4])[0]
                        if length == 0 or length > 5 * 1024 * 1024:
                            raise ValueError(f'L2CAP packet length {length}')
                        if len(self.buffer) < 4 + length:
                            break
                        message = bytes(self.buffer[4:4 + length])
                        del self.buffer[:4 + length]
                        await socket.on_message(message)
            except Exception as error:  # noqa: BLE001 - reported and the socket closed
                print('ERROR', repr(error), flush=True)
            socket.closed.set()

        return loop.create_task(pump())


async def open_device(port, address):
    exit_with_parent()
    transport = await open_transport(f'tcp-client:127.0.0.1:{port}')
    device = Device.with_hci('android', Address(address), transport.source, transport.sink)
    await device.power_on()
    return transport, device


async def run_server(port, address, service_id, endpoint_id, info, bridge_port, form, with_l2cap):
    transport, device = await open_device(port, address)
    loop = asyncio.get_running_loop()
    service_hash = sha256(service_id.encode())[:3]
    pcp = 3  # P2P_POINT_TO_POINT

    async def bridge(socket):
        await socket.established.wait()
        reader, writer = await asyncio.open_connection('127.0.0.1', bridge_port)
        relay = loop.create_task(socket.relay_from_tcp(reader, writer))
        await socket.closed.wait()
        writer.close()
        relay.cancel()
        print('CLOSED', flush=True)

    # L2CAP server.
    psm = 0
    if with_l2cap:
        def on_channel(channel):
            path = L2capPath(channel)
            socket = Socket('l2cap', service_hash, path.send, is_server=True)
            path.attach(socket, loop)
            loop.create_task(bridge(socket))

        server = device.create_l2cap_server(
            spec=LeCreditBasedChannelSpec(psm=None, mtu=2048, mps=247, max_credits=64), handler=on_channel)
        psm = server.psm

    data = connections_advertisement(form == 'fast', pcp, service_hash, endpoint_id, info)
    regular = medium_advertisement(False, service_hash, connections_advertisement(False, pcp, service_hash, endpoint_id, info), psm)

    # Weave GATT server, plus slot 0 holding the regular advertisement.
    weaves = {}

    async def on_weave_write(connection, value):
        state = weaves.get(connection.handle)
        try:
            if state is None or value[0] & 0x8F == 0x80:
                weave = Weave()
                kind, size = weave.receive(value)
                if kind != 'request':
                    raise ValueError('the first Weave packet is not a connection request')
                mtu = connection.att_mtu
                weave.packet_size = min(size, mtu - 3) if size else mtu - 3

                async def send(message, connection=connection, weave=weave):
                    for packet in weave.packets(message):
                        await device.indicate_subscriber(connection, to_client, packet)

                socket = Socket('gatt', service_hash, send, is_server=True)
                weaves[connection.handle] = (weave, socket)
                await device.indicate_subscriber(connection, to_client, weave.confirm(weave.packet_size))
                loop.create_task(bridge(socket))
                return
            weave, socket = state
            result = weave.receive(value)
            if result is None:
                return
            kind, payload = result
            if kind == 'message':
                await socket.on_message(payload)
            elif kind == 'error':
                socket.closed.set()
        except Exception as error:  # noqa: BLE001
            print('ERROR', repr(error), flush=True)
            if state:
                state[1].closed.set()

    to_server = Characteristic(WEAVE_TO_SERVER, Characteristic.Properties.WRITE, Characteristic.WRITEABLE,
                               CharacteristicValue(write=on_weave_write))
    to_client = Characteristic(WEAVE_TO_CLIENT, Characteristic.Properties.INDICATE, Characteristic.READABLE, b'')
    slot = Characteristic(slot_uuid(0), Characteristic.Properties.READ, Characteristic.READABLE, regular)
    device.add_service(Service(UUID.from_16_bits(COPRESENCE), [to_server, to_client, slot]))

    if form == 'fast':
        await device.start_advertising(advertising_data=service_data_ad(medium_advertisement(True, service_hash, data, 0)),
                                       advertising_interval_min=100, advertising_interval_max=100, auto_restart=True)
    elif form == 'header':
        await device.start_advertising(advertising_data=service_data_ad(advertisement_header(service_id, [regular], psm)),
                                       advertising_interval_min=100, advertising_interval_max=100, auto_restart=True)
    else:
        parameters = AdvertisingParameters(
            advertising_event_properties=AdvertisingEventProperties(is_connectable=True, is_legacy=False),
            primary_advertising_interval_min=100, primary_advertising_interval_max=100,
            own_address_type=OwnAddressType.RANDOM)
        await device.create_advertising_set(advertising_parameters=parameters, random_address=Address(address),
                                            advertising_data=service_data_ad(regular), auto_restart=True)
    print('READY', address, psm, flush=True)
    await asyncio.get_running_loop().create_future()


async def run_client(port, address, service_id, path):
    loop = asyncio.get_running_loop()
    accepted = loop.create_future()

    async def on_tcp(reader, writer):
        if not accepted.done():
            accepted.set_result((reader, writer))

    tcp = await asyncio.start_server(on_tcp, '127.0.0.1', 0)
    print('READY', tcp.sockets[0].getsockname()[1], flush=True)
    reader, writer = await accepted

    transport, device = await open_device(port, address)
    service_hash = sha256(service_id.encode())[:3]
    found = loop.create_future()

    def on_advertisement(advertisement):
        if found.done():
            return
        for uuid, data in advertisement.data.get_all(AdvertisingData.SERVICE_DATA_16_BIT_UUID):
            if int(uuid.to_hex_str(), 16) != COPRESENCE:
                continue
            data = bytes(data)
            if data[0] >> 5 == 2 and data[0] & 0x02:  # fast medium advertisement: no PSM
                found.set_result((advertisement.address, None, 0))
            elif data[0] >> 5 == 2 and len(data) in (15, 17) and bloom_contains(data[1:11], service_id):
                found.set_result((advertisement.address, 'header', struct.unpack('>H', data[15:17])[0] if len(data) == 17 else 0))
            elif data[1:4] == service_hash:
                found.set_result((advertisement.address, None, medium_psm(data)))

    device.on('advertisement', on_advertisement)
    await device.start_scanning(filter_duplicates=False)
    peer_address, kind, psm = await asyncio.wait_for(found, 60)
    await device.stop_scanning()
    print('FOUND', peer_address.to_string(False), psm, flush=True)
    connection = await device.connect(peer_address, timeout=10)
    peer = Peer(connection)
    await peer.request_mtu(517)
    if kind == 'header':
        await peer.discover_services([UUID.from_16_bits(COPRESENCE)])
        service = peer.get_services_by_uuid(UUID.from_16_bits(COPRESENCE))[0]
        await service.discover_characteristics()
        slot = service.get_characteristics_by_uuid(slot_uuid(0))[0]
        regular = bytes(await slot.read_value())
        if regular[1:4] != service_hash:
            raise SystemExit('slot 0 is not our service')
        psm = medium_psm(regular) or psm
        print('SLOT', regular.hex(), flush=True)

    if path == 'l2cap':
        if not psm:
            raise SystemExit('no PSM advertised')
        channel = await connection.create_l2cap_channel(
            spec=LeCreditBasedChannelSpec(psm=psm, mtu=2048, mps=247, max_credits=64))
        l2cap = L2capPath(channel)
        socket = Socket('l2cap', service_hash, l2cap.send, is_server=False)
        l2cap.attach(socket, loop)
        await l2cap.send(b'\x03')
    else:
        await peer.discover_services([UUID.from_16_bits(COPRESENCE)])
        service = peer.get_services_by_uuid(UUID.from_16_bits(COPRESENCE))[0]
        await service.discover_characteristics()
        to_server = service.get_characteristics_by_uuid(WEAVE_TO_SERVER)[0]
        to_client = service.get_characteristics_by_uuid(WEAVE_TO_CLIENT)[0]
        weave = Weave()
        confirmed = loop.create_future()
        queue = asyncio.Queue()

        async def send(message):
            for packet in weave.packets(message):
                await to_server.write_value(packet, with_response=True)

        socket = Socket('gatt', service_hash, send, is_server=False)
        socket.established.set()

        async def pump():
            try:
                while True:
                    value = await queue.get()
                    result = weave.receive(value)
                    if result is None:
                        continue
                    what, payload = result
                    if what == 'confirm':
                        weave.packet_size = payload
                        confirmed.set_result(True)
                    elif what == 'message':
                        await socket.on_message(payload)
                    elif what == 'error':
                        break
            except Exception as error:  # noqa: BLE001
                print('ERROR', repr(error), flush=True)
            socket.closed.set()

        # Indications first (stock Samsung phones write the 0102 CCCD, then 0101).
        await to_client.subscribe(lambda value: queue.put_nowait(bytes(value)), prefer_notify=False)
        pump_task = loop.create_task(pump())
        await to_server.write_value(weave.request(connection.att_mtu - 3), with_response=True)
        await asyncio.wait_for(confirmed, 5)
        await send(introduction(service_hash))
        print('SOCKET gatt', flush=True)
    await socket.established.wait()
    relay = loop.create_task(socket.relay_from_tcp(reader, writer))
    await socket.closed.wait()
    writer.close()
    relay.cancel()
    print('CLOSED', flush=True)
    await asyncio.sleep(0.5)
    await transport.close()


def medium_psm(data):
    """The PSM in a regular medium advertisement's extra fields (mask bit 0x01), or 0."""
    length = struct.unpack('>I', data[4:8])[0]
    rest = data[8 + length + 2:]
    if rest and rest[0] & 0x01 and len(rest) >= 3:
        return struct.unpack('>H', rest[1:3])[0]
    return 0


def main():
    mode, port = sys.argv[1], int(sys.argv[2])
    if mode == 'server':
        address, service_id, endpoint_id = sys.argv[3], sys.argv[4], sys.argv[5].encode()
        info, bridge_port, form = bytes.fromhex(sys.argv[6]), int(sys.argv[7]), sys.argv[8]
        asyncio.run(run_server(port, address, service_id, endpoint_id, info, bridge_port, form, 'l2cap' in sys.argv[9:]))
    elif mode == 'client':
        asyncio.run(run_client(port, sys.argv[3], sys.argv[4], sys.argv[5]))
    else:
        raise SystemExit(f'unknown mode {mode}')


if __name__ == '__main__':
    main()
