# frozen_string_literal: true

module LlmFailover
  class Scrubber
    # The checksums that tell a card number or an IBAN from any run of digits, and
    # the SSA's rules for a US social security number.
    module Checks
      module_function

      # Luhn (ISO/IEC 7812) over the digits of +text+, separators ignored.
      def luhn?(text)
        sum = 0
        double = false
        text.delete("^0-9").each_byte.reverse_each do |b|
          d = b - 48
          if double
            d *= 2
            d -= 9 if d > 9
          end
          sum += d
          double = !double
        end
        (sum % 10).zero?
      end

      # ISO 13616: the country code and check digits moved to the end, letters as
      # 10..35, the number mod 97 is 1.
      def iban?(text)
        compact = text.delete(" ")
        return false unless compact.length.between?(15, 34)

        rearranged = compact[4..] + compact[0, 4]
        digits = rearranged.each_char.map { |c| c.ord >= 65 ? (c.ord - 55).to_s : c }.join
        digits.to_i % 97 == 1
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
