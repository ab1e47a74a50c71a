"""Java 17's text of doubles and floats (``Double.toString``, ``Float.toString``), which Spark's ``to_json`` writes.

OpenJDK's ``FloatingDecimal.BinaryToASCIIBuffer.dtoa`` (8 to 18), ported step for step, overflows of its int and
long arithmetic included. It is not always the shortest text that reads back (1.0E23 prints as
9.999999999999999E22, 6.0E10f as 6.0000002E10); Java 19 changed it to the shortest (JDK-4511638), so a server on
Java 19 or later writes such values otherwise (the same values, read back).
"""

from __future__ import annotations

import math
import struct
from functools import lru_cache

_N_5_BITS = (0, 3, 5, 7, 10, 12, 14, 17, 19, 21, 24, 26, 28, 31, 33, 35, 38, 40, 42, 45, 47, 49, 52, 54, 56, 59, 61)


@lru_cache(maxsize=1 << 14)
def java_double_text(bits: int) -> str:
    """``Double.toString`` of the double whose IEEE 754 bits are ``bits``."""
    fraction, exponent = bits & ((1 << 52) - 1), (bits >> 52) & 0x7FF
    return _java_text(bits >> 63, fraction, exponent, 52, 1023)


@lru_cache(maxsize=1 << 14)
def java_float_text(bits: int) -> str:
    """``Float.toString`` of the float whose IEEE 754 bits are ``bits``."""
    fraction, exponent = bits & ((1 << 23) - 1), (bits >> 23) & 0xFF
    return _java_text(bits >> 31, fraction, exponent, 23, 127)


def _java_text(negative: int, fraction: int, exponent: int, fraction_width: int, bias: int) -> str:
    """FloatingDecimal.getBinaryToASCIIConverter and getChars, for a double (fraction_width 52) or a float."""
    sign = "-" if negative else ""
    if exponent == 2 * bias + 1:
        return "NaN" if fraction else sign + "Infinity"
    if exponent == 0:
        if fraction == 0:
            return sign + "0.0"
        word = 64 if fraction_width == 52 else 32
        leading_zeros = word - fraction.bit_length()
        shift = leading_zeros - (word - 1 - fraction_width)
        fraction, exponent, significant_bits = fraction << shift, 1 - shift, word - leading_zeros
    else:
        fraction, significant_bits = fraction | (1 << fraction_width), fraction_width + 1
    digits, decimal_exponent = _java_digits(exponent - bias, fraction << (52 - fraction_width), significant_bits)
    return sign + _java_layout(digits, decimal_exponent)


def _java_layout(digits: str, decimal_exponent: int) -> str:
    """BinaryToASCIIBuffer.getChars: plain from 10^-3 up to 10^7, else computerized scientific notation (the
    value is 0.digits · 10^decimal_exponent)."""
    if 0 < decimal_exponent < 8:
        whole = digits[:decimal_exponent]
        if len(whole) < decimal_exponent:
            return whole + "0" * (decimal_exponent - len(whole)) + ".0"
        return whole + "." + (digits[decimal_exponent:] or "0")
    if -3 < decimal_exponent <= 0:
        return "0." + "0" * -decimal_exponent + digits
    return digits[0] + "." + (digits[1:] or "0") + "E" + str(decimal_exponent - 1)


def _wrapped(value: int, width: int) -> int:
    """``value`` in Java's int (width 32) or long (64) arithmetic: wrapped to two's complement."""
    half = 1 << (width - 1)
    return (value + half) % (half << 1) - half


_POWERS_OF_5 = tuple(5**i for i in range(400))  # dtoa scales by at most 5^326


def _java_digits(binary_exponent: int, fraction: int, significant_bits: int) -> tuple[str, int]:
    """BinaryToASCIIBuffer.dtoa: the digits of 2^binary_exponent · fraction / 2^52 (its high bit set) and
    their decimal exponent (the value is 0.digits · 10^exponent)."""
    tail_zeros = (fraction & -fraction).bit_length() - 1
    fraction_bits = 53 - tail_zeros
    tiny_bits = max(0, fraction_bits - binary_exponent - 1)  # significant bits right of the binary point
    if tiny_bits == 0 and binary_exponent <= 62:  # an integer below 2^63: its long's digits
        ulp_exponent = binary_exponent - significant_bits - 1
        insignificant = len(str(1 << ulp_exponent)) - 1 if ulp_exponent > 1 else 0  # whole digits below half an ulp
        value = fraction << (binary_exponent - 52) if binary_exponent >= 52 else fraction >> (52 - binary_exponent)
        if insignificant:
            value, residue = divmod(value, 10**insignificant)
            if residue >= 10**insignificant // 2:
                value += 1
        text = str(value)
        return text.rstrip("0"), len(text) + insignificant

    # B / S is the value scaled into [1, 10) by 10^decimal_exponent, M half its ulp on the same scale; each
    # digit is B / S, and generation stops once the remainder is within M of either neighbour
    high_bits = struct.unpack("<d", struct.pack("<Q", (1023 << 52) | (fraction & ((1 << 52) - 1))))[0]
    decimal_exponent = math.floor((high_bits - 1.5) * 0.289529654 + 0.176091259 + binary_exponent * 0.301029995663981)
    b5 = max(0, -decimal_exponent)
    b2 = b5 + tiny_bits + binary_exponent
    s5 = max(0, decimal_exponent)
    s2 = s5 + tiny_bits
    m5, m2 = b5, b2 - significant_bits
    fraction >>= tail_zeros
    b2 -= fraction_bits - 1
    common = min(b2, s2)
    b2, s2, m2 = b2 - common, s2 - common, m2 - common
    if fraction_bits == 1:  # a power of two: the next value down is half an ulp closer
        m2 -= 1
    if m2 < 0:
        b2, s2, m2 = b2 - m2, s2 - m2, 0
    b_bits = fraction_bits + b2 + (_N_5_BITS[b5] if b5 < len(_N_5_BITS) else b5 * 3)
    ten_s_bits = s2 + 1 + (_N_5_BITS[s5 + 1] if s5 + 1 < len(_N_5_BITS) else (s5 + 1) * 3)
    b, s = fraction * _POWERS_OF_5[b5] << b2, _POWERS_OF_5[s5] << s2
    if b_bits < 64 and ten_s_bits < 64:
        # Java's int or long arithmetic: B, S and 10·S fit by the bounds above, M and B + M can overflow
        width = 32 if b_bits < 32 and ten_s_bits < 32 else 64
        limit = 1 << (width - 1)
        m, tens = _POWERS_OF_5[m5] << m2, s * 10
        q, rest = divmod(b, s)
        b, m = 10 * rest, _wrapped(m * 10, width)
        low, high = b < m, _wrapped(b + m, width) > tens
        inclusive = False
    else:
        m, tens = _POWERS_OF_5[m5 + 1] << (m2 + 1), _POWERS_OF_5[s5 + 1] << (s2 + 1)
        q, rest = divmod(b, s)
        b = 10 * rest
        low, high = b < m, b + m >= tens
        inclusive = True  # FDBigInteger's addAndCmp: B + M reaching 10·S already stops
        width = limit = 0  # exact: no overflow
    digits, count = 0, 0
    if q == 0 and not high:  # the estimate was one too high
        decimal_exponent -= 1
    else:
        digits, count = q, 1
    if decimal_exponent < -3 or decimal_exponent >= 8:  # E-form has at least two digits
        low = high = False
    while not low and not high:
        q, rest = divmod(b, s)
        b, m = 10 * rest, m * 10
        digits, count = digits * 10 + q, count + 1
        if inclusive:
            low, high = b < m, b + m >= tens
            continue
        if not -limit <= m < limit:
            m = _wrapped(m, width)
        if m <= 0:  # Java's own guard against the overflow of M
            low = high = True
        else:
            total = b + m
            low, high = b < m, (total if total < limit else _wrapped(total, width)) > tens
    # a tie between the neighbours (2·B = 10·S) rounds to an even last digit
    if high and (not low or 2 * b > tens or (2 * b == tens and digits & 1)):
        digits += 1
        if digits == 10**count:  # the carry left the first digit: Java keeps the digit count
            digits //= 10
            decimal_exponent += 1
    return f"{digits:0{count}d}", decimal_exponent + 1
