#!/usr/bin/env python3
"""Independent oracle for the UKEY2 + D2D transcript of swift-nearby.

Reads a JSON object of fixed inputs on stdin (hex strings) and prints a JSON object with every value the handshake
derives, computed with PyPI's `cryptography` and `protobuf` packages only. The Swift tests feed the same inputs to
their own implementation and require byte-for-byte agreement.

Inputs:  client_private_key, server_private_key (32-byte P-256 scalars), client_random, server_random (32 bytes),
         iv (16 bytes), message (the plaintext OfflineFrame bytes the client sends first),
         optional server_secure_message (a SecureMessage the Swift server encoded; decoded and checked here).
Outputs: see the keys of `result` below; all byte values are lower-case hex.

The protobuf messages are declared here, programmatically, from the protocol's field numbers; nothing is shared
with the Swift side's .proto files.
"""
import hashlib
import hmac
import json
import sys

from cryptography.hazmat.primitives import hashes, padding
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

F = descriptor_pb2.FieldDescriptorProto


def _declare():
    """Declares the few messages the transcript needs and returns their classes by name."""
    file = descriptor_pb2.FileDescriptorProto(name="oracle.proto", package="oracle", syntax="proto2")
    layouts = {
        # name: [(field name, number, type, label, message type name)]
        "Ukey2Message": [("message_type", 1, F.TYPE_INT32, F.LABEL_OPTIONAL, None),
                         ("message_data", 2, F.TYPE_BYTES, F.LABEL_OPTIONAL, None)],
        "CipherCommitment": [("handshake_cipher", 1, F.TYPE_INT32, F.LABEL_OPTIONAL, None),
                             ("commitment", 2, F.TYPE_BYTES, F.LABEL_OPTIONAL, None)],
        "Ukey2ClientInit": [("version", 1, F.TYPE_INT32, F.LABEL_OPTIONAL, None),
                            ("random", 2, F.TYPE_BYTES, F.LABEL_OPTIONAL, None),
                            ("cipher_commitments", 3, F.TYPE_MESSAGE, F.LABEL_REPEATED, ".oracle.CipherCommitment"),
                            ("next_protocol", 4, F.TYPE_STRING, F.LABEL_OPTIONAL, None)],
        "Ukey2ServerInit": [("version", 1, F.TYPE_INT32, F.LABEL_OPTIONAL, None),
                            ("random", 2, F.TYPE_BYTES, F.LABEL_OPTIONAL, None),
                            ("handshake_cipher", 3, F.TYPE_INT32, F.LABEL_OPTIONAL, None),
                            ("public_key", 4, F.TYPE_BYTES, F.LABEL_OPTIONAL, None)],
        "Ukey2ClientFinished": [("public_key", 1, F.TYPE_BYTES, F.LABEL_OPTIONAL, None)],
        "EcP256PublicKey": [("x", 1, F.TYPE_BYTES, F.LABEL_OPTIONAL, None),
                            ("y", 2, F.TYPE_BYTES, F.LABEL_OPTIONAL, None)],
        "GenericPublicKey": [("type", 1, F.TYPE_INT32, F.LABEL_OPTIONAL, None),
                             ("ec_p256_public_key", 2, F.TYPE_MESSAGE, F.LABEL_OPTIONAL, ".oracle.EcP256PublicKey")],
        "SecureMessage": [("header_and_body", 1, F.TYPE_BYTES, F.LABEL_OPTIONAL, None),
                          ("signature", 2, F.TYPE_BYTES, F.LABEL_OPTIONAL, None)],
        "Header": [("signature_scheme", 1, F.TYPE_INT32, F.LABEL_OPTIONAL, None),
                   ("encryption_scheme", 2, F.TYPE_INT32, F.LABEL_OPTIONAL, None),
                   ("iv", 5, F.TYPE_BYTES, F.LABEL_OPTIONAL, None),
                   ("public_metadata", 6, F.TYPE_BYTES, F.LABEL_OPTIONAL, None)],
        "HeaderAndBody": [("header", 1, F.TYPE_MESSAGE, F.LABEL_OPTIONAL, ".oracle.Header"),
                          ("body", 2, F.TYPE_BYTES, F.LABEL_OPTIONAL, None)],
        "GcmMetadata": [("type", 1, F.TYPE_INT32, F.LABEL_OPTIONAL, None),
                        ("version", 2, F.TYPE_INT32, F.LABEL_OPTIONAL, None)],
        "DeviceToDeviceMessage": [("message", 1, F.TYPE_BYTES, F.LABEL_OPTIONAL, None),
                                  ("sequence_number", 2, F.TYPE_INT32, F.LABEL_OPTIONAL, None)],
    }
    for name, fields in layouts.items():
        message = file.message_type.add(name=name)
        for field_name, number, field_type, label, type_name in fields:
            field = message.field.add(name=field_name, number=number, type=field_type, label=label)
            if type_name:
                field.type_name = type_name
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    classes = {}
    for name in layouts:
        descriptor = pool.FindMessageTypeByName("oracle." + name)
        if hasattr(message_factory, "GetMessageClass"):
            classes[name] = message_factory.GetMessageClass(descriptor)
        else:  # older protobuf releases
            classes[name] = message_factory.MessageFactory(pool).GetPrototype(descriptor)
    return classes


M = _declare()
CLIENT_INIT, SERVER_INIT, CLIENT_FINISH = 2, 3, 4
P256_SHA512 = 100
NEXT_PROTOCOL = "AES_256_CBC-HMAC_SHA256"


def hkdf(ikm, salt, info):
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=salt, info=info).derive(ikm)


def coordinate(value):
    """Minimal big-endian magnitude with one 0x00 always in front."""
    return b"\x00" + value.to_bytes(32, "big").lstrip(b"\x00")


def generic_public_key(private_key):
    numbers = private_key.public_key().public_numbers()
    key = M["GenericPublicKey"](type=1)
    key.ec_p256_public_key.x = coordinate(numbers.x)
    key.ec_p256_public_key.y = coordinate(numbers.y)
    return key.SerializeToString()


def wrap(message_type, inner):
    return M["Ukey2Message"](message_type=message_type, message_data=inner.SerializeToString()).SerializeToString()


def direction_keys(base):
    salt = hashlib.sha256(b"SecureMessage").digest()
    return hkdf(base, salt, b"ENC:2"), hkdf(base, salt, b"SIG:1")


def encode_secure_message(enc_key, sig_key, iv, message, sequence):
    plaintext = M["DeviceToDeviceMessage"](message=message, sequence_number=sequence).SerializeToString()
    padder = padding.PKCS7(128).padder()
    padded = padder.update(plaintext) + padder.finalize()
    encryptor = Cipher(algorithms.AES(enc_key), modes.CBC(iv)).encryptor()
    body = encryptor.update(padded) + encryptor.finalize()
    metadata = M["GcmMetadata"](type=13, version=1).SerializeToString()
    header_and_body = M["HeaderAndBody"](body=body)
    header_and_body.header.signature_scheme = 1
    header_and_body.header.encryption_scheme = 2
    header_and_body.header.iv = iv
    header_and_body.header.public_metadata = metadata
    signed = header_and_body.SerializeToString()
    signature = hmac.new(sig_key, signed, hashlib.sha256).digest()
    return M["SecureMessage"](header_and_body=signed, signature=signature).SerializeToString()


def decode_secure_message(enc_key, sig_key, data):
    secure = M["SecureMessage"]()
    secure.ParseFromString(data)
    expected = hmac.new(sig_key, secure.header_and_body, hashlib.sha256).digest()
    if not hmac.compare_digest(expected, secure.signature):
        raise ValueError("signature does not verify")
    header_and_body = M["HeaderAndBody"]()
    header_and_body.ParseFromString(secure.header_and_body)
    decryptor = Cipher(algorithms.AES(enc_key), modes.CBC(header_and_body.header.iv)).decryptor()
    padded = decryptor.update(header_and_body.body) + decryptor.finalize()
    unpadder = padding.PKCS7(128).unpadder()
    plaintext = unpadder.update(padded) + unpadder.finalize()
    inner = M["DeviceToDeviceMessage"]()
    inner.ParseFromString(plaintext)
    metadata = M["GcmMetadata"]()
    metadata.ParseFromString(header_and_body.header.public_metadata)
    return inner.message, inner.sequence_number, metadata.type, metadata.version


def four_digits(data):
    value, multiplier = 0, 1
    for byte in data:
        signed = byte - 256 if byte > 127 else byte
        value = value + signed * multiplier
        value = int(value - 9973 * int(value / 9973))  # remainder with the dividend's sign, as in C and Java
        multiplier = (multiplier * 31) % 9973
    return "%04d" % abs(value)


def token(data):
    import base64
    return base64.urlsafe_b64encode(data).decode().rstrip("=")[:5].upper()


def run(inputs):
    h = {key: bytes.fromhex(value) for key, value in inputs.items()}
    client_key = ec.derive_private_key(int.from_bytes(h["client_private_key"], "big"), ec.SECP256R1())
    server_key = ec.derive_private_key(int.from_bytes(h["server_private_key"], "big"), ec.SECP256R1())

    client_finished = wrap(CLIENT_FINISH, M["Ukey2ClientFinished"](public_key=generic_public_key(client_key)))
    commitment = hashlib.sha512(client_finished).digest()
    client_init = M["Ukey2ClientInit"](version=1, random=h["client_random"], next_protocol=NEXT_PROTOCOL)
    client_init.cipher_commitments.add(handshake_cipher=P256_SHA512, commitment=commitment)
    m1 = wrap(CLIENT_INIT, client_init)
    server_init = M["Ukey2ServerInit"](version=1, random=h["server_random"], handshake_cipher=P256_SHA512,
                                       public_key=generic_public_key(server_key))
    m2 = wrap(SERVER_INIT, server_init)

    shared_x = client_key.exchange(ec.ECDH(), server_key.public_key())
    assert shared_x == server_key.exchange(ec.ECDH(), client_key.public_key())
    dhs = hashlib.sha256(shared_x).digest()
    auth_string = hkdf(dhs, b"UKEY2 v1 auth", m1 + m2)
    next_secret = hkdf(dhs, b"UKEY2 v1 next", m1 + m2)
    d2d_salt = hashlib.sha256(b"D2D").digest()
    client_d2d = hkdf(next_secret, d2d_salt, b"client")
    server_d2d = hkdf(next_secret, d2d_salt, b"server")
    client_enc, client_sig = direction_keys(client_d2d)
    server_enc, server_sig = direction_keys(server_d2d)

    result = {
        "client_finished": client_finished, "commitment": commitment, "client_init": m1, "server_init": m2,
        "shared_x": shared_x, "dhs": dhs, "auth_string": auth_string, "next_secret": next_secret,
        "d2d_client_key": client_d2d, "d2d_server_key": server_d2d,
        "client_encryption_key": client_enc, "client_signing_key": client_sig,
        "server_encryption_key": server_enc, "server_signing_key": server_sig,
        "client_secure_message": encode_secure_message(client_enc, client_sig, h["iv"], h["message"], 1),
    }
    output = {key: value.hex() for key, value in result.items()}
    output["digits"] = four_digits(auth_string)
    output["token"] = token(auth_string)
    if "server_secure_message" in h:
        message, sequence, metadata_type, metadata_version = decode_secure_message(
            server_enc, server_sig, h["server_secure_message"])
        output["server_message_decoded"] = message.hex()
        output["server_message_sequence"] = sequence
        output["server_message_metadata"] = [metadata_type, metadata_version]
    return output


if __name__ == "__main__":
    # Self-check of the 4-digit algorithm against the published vectors before answering.
    assert four_digits(b"rawABCDE") == "0392" and four_digits(b"raw\xd5\x01\xe4\x03\x81") == "6251"
    assert four_digits(b"") == "0000"
    json.dump(run(json.load(sys.stdin)), sys.stdout)
