# frozen_string_literal: true

module LlmFailover
  class Scrubber
    # The checksums that tell a card number or an IBAN from any run of digits, and
    # the SSA's rules for a US social security number.
    module Checks
      module_function

      # A doubled digit's contribution to the Luhn sum.
      LUHN_DOUBLED = [0, 2, 4, 6, 8, 1, 3, 5, 7, 9].freeze
      private_constant :LUHN_DOUBLED

      # Luhn (ISO/IEC 7812) over the digits of +text+, separators ignored: from the
      # right, every second digit doubled.
      def luhn?(text)
        digits = text.delete("^0-9")
        sum = 0
        i = digits.bytesize - 1
        while i >= 0
          sum += digits.getbyte(i) - 48
          sum += LUHN_DOUBLED[digits.getbyte(i - 1) - 48] if i.positive?
          i -= 2
        end
        (sum % 10).zero?
      end

      # ISO 13616: the country code and check digits moved to the end, letters as
      # 10..35, the number mod 97 is 1 (computed a digit or a letter at a time).
      def iban?(text)
        compact = text.delete(" ")
        return false unless compact.length.between?(15, 34)

        n = compact.bytesize
        rest = 0
        i = 4
        while i < n + 4
          b = compact.getbyte(i < n ? i : i - n)
          rest = b >= 65 ? (rest * 100 + b - 55) % 97 : (rest * 10 + b - 48) % 97
          i += 1
        end
        rest == 1
      end

      # Area 000, 666 and 900-999, group 00 and serial 0000 are never issued.
      def ssn?(text)
        digits = text.delete("^0-9")
        area = digits[0, 3].to_i
        area != 0 && area != 666 && area < 900 && digits[3, 2] != "00" && digits[5, 4] != "0000"
      end

      # A phone number has 10 to 15 digits (E.164), separators and "+" aside.
      def phone?(text)
        text.count("0-9").between?(10, 15)
      end
    end
  end
end
