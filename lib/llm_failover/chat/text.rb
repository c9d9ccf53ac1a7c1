# frozen_string_literal: true

module LlmFailover
  # The one check of text a user gives a chat (prompts, instructions) before anything
  # is stored: what is stored is what the next call sends, so nothing may be stored
  # that the call would refuse or garble.
  #
  # @api private
  module Text
    BLANK = /\A[\0\t\n\v\f\r ]*\z/.freeze # what String#strip removes
    private_constant :BLANK

    module_function

    # {utf8}, and not empty or only what String#strip removes.
    # @return [String]
    # @raise [ArgumentError]
    def given(text, what)
      text = utf8(text, what)
      raise ArgumentError, "#{what} must not be empty" if blank?(text)

      text
    end

    # +text+ (in an ASCII-compatible encoding) is empty or only what String#strip
    # removes. The regexp runs only when the first byte could be one of those: most
    # text starts with a letter.
    def blank?(text)
      first = text.getbyte(0)
      return true if first.nil?
      return false if first > 32 && text.encoding.ascii_compatible?

      BLANK.match?(text)
    end

    # +text+ as UTF-8: a valid UTF-8 String itself, any other String converted (Latin-1,
    # UTF-16, Shift_JIS, ...; binary bytes are read as UTF-8).
    # @param what [String] how a message names the text ("the prompt", "the instructions")
    # @return [String]
    # @raise [ArgumentError] not a String, or bytes that are not text in their encoding
    #   (or have no UTF-8 form); the message gives the byte offset of the first
    def utf8(text, what)
      raise ArgumentError, "#{what} must be a String, got #{text.class}" unless text.is_a?(String)

      encoding = text.encoding
      return text if encoding == Encoding::UTF_8 && text.valid_encoding?

      if encoding == Encoding::UTF_8 || encoding == Encoding::BINARY || encoding == Encoding::US_ASCII
        utf8 = text.dup.force_encoding(Encoding::UTF_8)
        return utf8 if utf8.valid_encoding?

        raise ArgumentError, "invalid UTF-8 in #{what}: #{bad_bytes(utf8)}"
      end
      begin
        text.encode(Encoding::UTF_8)
      rescue EncodingError
        raise ArgumentError, "cannot convert #{what} from #{encoding} to UTF-8: #{bad_bytes(text)}"
      end
    end

    # "byte 0xFF at byte offset 3": the first character of +text+ that is not valid in
    # its encoding or has no UTF-8 form.
    def bad_bytes(text)
      text, offset = without_bom(text)
      text.each_char do |char|
        unless char.valid_encoding? && convertible?(char)
          hex = char.bytes.map { |b| format("0x%02X", b) }.join(" ")
          return "#{char.bytesize == 1 ? 'byte' : 'bytes'} #{hex} at byte offset #{offset}"
        end
        offset += char.bytesize
      end
      "no character to blame" # not reached: the caller saw a conversion fail
    end

    # UTF-16 and UTF-32 (the byte order given by a BOM) read character by character
    # only once the order is known: [the characters after the BOM, the BOM's size].
    def without_bom(text)
      unit = { Encoding::UTF_16 => 2, Encoding::UTF_32 => 4 }[text.encoding]
      return [text, 0] unless unit

      bytes = text.b
      little = bytes.start_with?(unit == 2 ? "\xFF\xFE".b : "\xFF\xFE\x00\x00".b)
      bom = little || bytes.start_with?(unit == 2 ? "\xFE\xFF".b : "\x00\x00\xFE\xFF".b) ? unit : 0
      [bytes.byteslice(bom..).force_encoding("UTF-#{unit * 8}#{little ? 'LE' : 'BE'}"), bom]
    end

    def convertible?(char)
      char.encode(Encoding::UTF_8)
      true
    rescue EncodingError
      false
    end
    private_class_method :bad_bytes, :without_bom, :convertible?
  end
end
