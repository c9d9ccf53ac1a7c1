# frozen_string_literal: true

require "zlib"

module LlmFailover
  module Testing
    class FakeProvider
      # AWS's binary event stream (application/vnd.amazon.eventstream), as Bedrock's
      # ConverseStream frames it: per message a prelude (total length, headers length, both
      # 32-bit big-endian, and their CRC32), string headers, the payload, and the CRC32 of
      # everything before it.
      module EventStream
        # Header value type 7: a string with a 16-bit length.
        STRING = 7

        module_function

        # One message with string headers.
        # @param headers [Hash{String=>String}]
        # @param payload [String]
        # @param bad_crc [Boolean] flip the message CRC (a frame a client must refuse)
        # @return [String] binary
        def frame(headers, payload, bad_crc: false)
          head = headers.map { |k, v| [k.bytesize].pack("C") + k.b + [STRING, v.bytesize].pack("Cn") + v.b }.join.b
          prelude = [16 + head.bytesize + payload.bytesize, head.bytesize].pack("NN")
          message = prelude + [Zlib.crc32(prelude)].pack("N") + head + payload.b
          crc = Zlib.crc32(message)
          message + [bad_crc ? crc ^ 1 : crc].pack("N")
        end

        # An event (:message-type event) whose payload is JSON.
        def event(type, payload, bad_crc: false)
          frame({ ":event-type" => type, ":content-type" => "application/json", ":message-type" => "event" },
                payload, bad_crc: bad_crc)
        end

        # An exception (:message-type exception), as ConverseStream sends one mid-stream.
        def exception(type, payload)
          frame({ ":exception-type" => type, ":content-type" => "application/json", ":message-type" => "exception" },
                payload)
        end

        # Splits a body into its messages by their prelude's length (the last one as far as
        # it goes), so that a recorded stream goes out a message per chunk.
        # @return [Array<String>]
        def split(body)
          body = body.b
          parts = []
          at = 0
          while at < body.bytesize
            total = body.byteslice(at, 4).unpack1("N").to_i
            total = body.bytesize - at if total < 16
            parts << body.byteslice(at, total)
            at += total
          end
          parts
        end

        # Every whole message of a body: [headers, payload], checked as a client checks
        # them (both CRCs); raises ArgumentError at the first broken one.
        # @return [Array<Array(Hash, String)>]
        def decode(body)
          body = body.b
          at = 0
          messages = []
          while body.bytesize - at >= 16
            total, head_len, prelude_crc = body.byteslice(at, 12).unpack("NNN")
            raise ArgumentError, "prelude CRC" unless Zlib.crc32(body.byteslice(at, 8)) == prelude_crc
            raise ArgumentError, "cut message" if body.bytesize - at < total

            message = body.byteslice(at, total)
            raise ArgumentError, "message CRC" unless Zlib.crc32(message.byteslice(0, total - 4)) ==
                                                     message.byteslice(total - 4, 4).unpack1("N")

            messages << [headers(message.byteslice(12, head_len)), message.byteslice(12 + head_len, total - head_len - 16)]
            at += total
          end
          messages
        end

        def headers(bytes)
          out = {}
          at = 0
          while at < bytes.bytesize
            name_len = bytes.getbyte(at)
            name = bytes.byteslice(at + 1, name_len)
            type = bytes.getbyte(at + 1 + name_len)
            raise ArgumentError, "header type #{type}" unless type == STRING

            value_len = bytes.byteslice(at + 2 + name_len, 2).unpack1("n")
            out[name] = bytes.byteslice(at + 4 + name_len, value_len).force_encoding(Encoding::UTF_8)
            at += 4 + name_len + value_len
          end
          out
        end
      end
    end
  end
end
