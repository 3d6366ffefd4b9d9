"""A Bumble host used as a third-party BLE peer by the Swift tests.

Usage:
  peer.py scan PORT SECONDS
      Scans; for every advertisement prints "ADV <address> <hex adv data>" and, when it carries 16-bit service
      data for 0xFEF3 (decoded by Bumble's AD parser), "FEF3 <address> <hex service data>".
  peer.py advertise PORT ADDRESS HEXDATA [SECONDS]
      Advertises HEXDATA (connectable, 100 ms) from ADDRESS; prints "READY <address>"; after SECONDS (if given)
      stops advertising and prints "STOPPED".
  peer.py echo PORT ADDRESS PSM MTU MPS CREDITS [HEXDATA]
      Runs an L2CAP LE CoC server on PSM that echoes every SDU, advertising (connectable, 100 ms, restarted after
      disconnection); prints "READY <address> <psm>", then "CHANNEL mtu=.. mps=.. peer_mtu=.. peer_mps=.." per
      channel and "CLOSED <bytes echoed>" when one closes.
  peer.py stall PORT ADDRESS PSM MTU MPS CREDITS
      Like echo, but never reads: the initial credits are all the peer ever gets.
"""
import asyncio
import sys

from bumble.core import AdvertisingData
from bumble.device import Device
from bumble.hci import Address
from bumble.l2cap import LeCreditBasedChannelSpec
from bumble.transport import open_transport

from rig_watchdog import exit_with_parent

DEFAULT_DATA = bytes.fromhex('020106')


async def open_device(port, address):
    exit_with_parent()
    transport = await open_transport(f'tcp-client:127.0.0.1:{port}')
    device = Device.with_hci('peer', Address(address), transport.source, transport.sink)
    await device.power_on()
    return transport, device


async def scan(port, seconds):
    transport, device = await open_device(port, 'C0:00:00:00:00:5C')

    def on_advertisement(advertisement):
        raw = advertisement.data_bytes
        print('ADV', advertisement.address.to_string(False), raw.hex(), flush=True)
        for uuid, data in advertisement.data.get_all(AdvertisingData.SERVICE_DATA_16_BIT_UUID):
            if int(uuid.to_hex_str(), 16) == 0xFEF3:
                print('FEF3', advertisement.address.to_string(False), bytes(data).hex(), flush=True)

    device.on('advertisement', on_advertisement)
    await device.start_scanning(filter_duplicates=False)
    print('READY', flush=True)
    await asyncio.sleep(seconds)
    await device.stop_scanning()
    await transport.close()


async def advertise(port, address, data, seconds):
    transport, device = await open_device(port, address)
    await device.start_advertising(
        advertising_data=data, advertising_interval_min=100, advertising_interval_max=100, auto_restart=True)
    print('READY', address, flush=True)
    if seconds is not None:
        # Killing this process would not stop the emulated controller's advertising; stop it explicitly.
        await asyncio.sleep(seconds)
        await device.stop_advertising()
        print('STOPPED', flush=True)
    await asyncio.get_running_loop().create_future()


async def serve(port, address, psm, mtu, mps, credits, echo, data):
    transport, device = await open_device(port, address)

    def on_channel(channel):
        print(f'CHANNEL mtu={channel.mtu} mps={channel.mps} peer_mtu={channel.peer_mtu} peer_mps={channel.peer_mps}',
              flush=True)
        counter = {'bytes': 0}
        if echo:
            def on_sdu(sdu):
                counter['bytes'] += len(sdu)
                channel.write(sdu)
            channel.sink = on_sdu
        else:
            channel.sink = lambda sdu: None
            # Never return credits: the Swift writer must block once the initial ones are spent.
            channel.peer_credits_threshold = -1

        channel.on('close', lambda: print('CLOSED', counter['bytes'], flush=True))

    server = device.create_l2cap_server(
        spec=LeCreditBasedChannelSpec(psm=psm, mtu=mtu, mps=mps, max_credits=credits), handler=on_channel)
    await device.start_advertising(
        advertising_data=data, advertising_interval_min=100, advertising_interval_max=100, auto_restart=True)
    print('READY', address, server.psm, flush=True)
    await asyncio.get_running_loop().create_future()


def main():
    mode, port = sys.argv[1], int(sys.argv[2])
    if mode == 'scan':
        asyncio.run(scan(port, float(sys.argv[3])))
    elif mode == 'advertise':
        seconds = float(sys.argv[5]) if len(sys.argv) > 5 else None
        asyncio.run(advertise(port, sys.argv[3], bytes.fromhex(sys.argv[4]), seconds))
    elif mode in ('echo', 'stall'):
        address, psm, mtu, mps, credits = sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
        data = bytes.fromhex(sys.argv[8]) if len(sys.argv) > 8 else DEFAULT_DATA
        asyncio.run(serve(port, address, psm, mtu, mps, credits, mode == 'echo', data))
    else:
        raise SystemExit(f'unknown mode {mode}')


if __name__ == '__main__':
    main()
