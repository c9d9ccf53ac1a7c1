# frozen_string_literal: true

require "socket"

module LlmFailover
  module Testing
    class FakeProvider
      # Raised inside a connection thread when FakeProvider#stop asks it to end.
      class Stopped < StandardError; end

      # Raised when the client sent something that is not HTTP/1.x.
      class BadRequest < StandardError; end

      # The HTTP/1.1 side of one connection: reads requests with its own buffer (so every
      # blocking read also watches the stop pipe) and writes response heads and chunks.
      class HttpIO
        MAX_LINE = 64 * 1024
        MAX_HEADERS = 200
        REASONS = {
          100 => "Continue", 200 => "OK", 201 => "Created", 204 => "No Content",
          400 => "Bad Request", 401 => "Unauthorized", 402 => "Payment Required", 403 => "Forbidden",
          404 => "Not Found", 405 => "Method Not Allowed", 408 => "Request Timeout", 409 => "Conflict",
          413 => "Payload Too Large", 422 => "Unprocessable Entity", 429 => "Too Many Requests",
          500 => "Internal Server Error", 502 => "Bad Gateway", 503 => "Service Unavailable",
          504 => "Gateway Timeout", 529 => "Site Overloaded"
        }.freeze

        attr_reader :socket

        # @param socket [TCPSocket] the accepted connection
        # @param stop_io [IO] becomes readable when the server stops
        def initialize(socket, stop_io)
          @socket = socket
          @stop_io = stop_io
          @buf = +"".b
        end

        # Reads one request. Answers `Expect: 100-continue` before reading the body.
        # @return [Array(String, String, Hash, String), nil] method, target, headers, body;
        #   nil when the client closed the connection between requests
        def read_request
          line = read_line
          line = read_line while line == "" # RFC 9112 allows stray CRLFs before a request
          return nil if line.nil?

          method, target, version = line.split(" ", 3)
          raise BadRequest, "bad request line" unless version&.start_with?("HTTP/1.") && target

          headers = read_headers
          body = +"".b
          if headers["transfer-encoding"].to_s.downcase.include?("chunked")
            continue_if_expected(headers)
            body = read_chunked_body
          elsif headers.key?("content-length")
            length = Integer(headers["content-length"], 10, exception: false)
            raise BadRequest, "bad content-length" if length.nil? || length.negative?

            continue_if_expected(headers) if length.positive?
            body = read_exact(length)
          end
          [method, target, headers, body]
        end

        # @param status [Integer]
        # @param headers [Array<Array(String, String)>] in the order to send
        def write_head(status, headers)
          head = +"HTTP/1.1 #{status} #{REASONS.fetch(status, 'Status')}\r\n"
          headers.each { |name, value| head << "#{name}: #{value}\r\n" }
          head << "\r\n"
          write(head)
        end

        # One HTTP chunk, in a single write so it leaves as one piece.
        def write_chunk(data)
          return if data.empty? # a zero-length chunk would end the body

          write("#{data.bytesize.to_s(16)}\r\n#{data}\r\n")
        end

        # The zero-length chunk that ends a chunked body.
        def finish_chunks
          write("0\r\n\r\n")
        end

        def write(data)
          @socket.write(data.b)
        end

        # Waits up to +seconds+ for the next request to start.
        # @return [Boolean] false when the connection stayed idle that long
        def wait_for_request(seconds)
          return true unless @buf.empty?

          ready, = IO.select([@socket, @stop_io], nil, nil, seconds)
          raise Stopped if ready&.include?(@stop_io)

          !ready.nil?
        end

        # Raised by #pause when the client closed the connection while the server waited
        # (a hedged request's loser, a cancelled call): nothing more can be sent.
        class HungUp < IOError; end

        # Sleeps +seconds+ while watching the connection: the client closing it ends the
        # wait with HungUp, the server stopping with Stopped. Bytes the client sends
        # meanwhile stay unread (they would be its next request).
        def pause(seconds)
          deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + seconds
          loop do
            left = deadline - Process.clock_gettime(Process::CLOCK_MONOTONIC)
            return if left <= 0

            ready, = IO.select([@socket, @stop_io], nil, nil, left)
            return if ready.nil?
            raise Stopped if ready.include?(@stop_io)
            raise HungUp, "the client closed the connection" if hung_up?

            return sleep([left, 0].max) # data: not a hang-up, and select would spin on it
          end
        end

        # Waits until the client goes away or the server stops, discarding whatever arrives.
        def wait_for_hangup
          loop do
            ready, = IO.select([@socket, @stop_io])
            return if ready.include?(@stop_io)

            data = @socket.read_nonblock(16 * 1024, exception: false)
            return if data.nil?
          end
        rescue IOError, SystemCallError
          nil
        end

        # Whether the readable socket says the client is gone (EOF or a reset).
        def hung_up?
          peeked = @socket.recv_nonblock(1, Socket::MSG_PEEK, exception: false)
          peeked.nil? || peeked == "" # EOF (nil or "", by Ruby version); bytes or :wait_readable: still there
        rescue IOError, SystemCallError
          true
        end

        # Closes with TCP RST instead of FIN.
        def reset!
          @socket.setsockopt(Socket::Option.linger(true, 0))
        rescue SystemCallError, IOError
          nil
        ensure
          close
        end

        def close
          @socket.close unless @socket.closed?
        rescue IOError, SystemCallError
          nil
        end

        private

        def continue_if_expected(headers)
          write("HTTP/1.1 100 Continue\r\n\r\n") if headers["expect"].to_s.casecmp?("100-continue")
        end

        def read_headers
          headers = {}
          MAX_HEADERS.times do
            line = read_line
            raise EOFError, "connection closed inside the request head" if line.nil?
            return headers if line.empty?

            name, value = line.split(":", 2)
            raise BadRequest, "bad header line" if value.nil? || name.empty? || name.match?(/\s/)

            name = name.downcase
            value = value.strip
            headers[name] = headers.key?(name) ? "#{headers[name]}, #{value}" : value
          end
          raise BadRequest, "too many header lines"
        end

        def read_chunked_body
          body = +"".b
          loop do
            size_line = read_line
            raise EOFError, "connection closed inside a chunked body" if size_line.nil?

            size = Integer(size_line.split(";", 2).first.strip, 16, exception: false)
            raise BadRequest, "bad chunk size" if size.nil? || size.negative?
            break if size.zero?

            body << read_exact(size)
            raise BadRequest, "chunk not followed by CRLF" unless read_line == ""
          end
          # Trailer fields, up to the empty line.
          loop do
            line = read_line
            raise EOFError, "connection closed inside chunked trailers" if line.nil?
            break if line.empty?
          end
          body
        end

        # @return [String, nil] one line without its line ending; nil on EOF before any byte
        def read_line
          loop do
            if (idx = @buf.index("\n"))
              line = @buf.slice!(0, idx + 1)
              return line.chomp
            end
            raise BadRequest, "line too long" if @buf.bytesize > MAX_LINE
            next if fill

            return nil if @buf.empty?

            raise EOFError, "connection closed mid-line"
          end
        end

        def read_exact(length)
          fill || raise(EOFError, "connection closed inside a request body") while @buf.bytesize < length
          @buf.slice!(0, length)
        end

        # @return [Boolean] false on EOF
        def fill
          ready, = IO.select([@socket, @stop_io])
          raise Stopped if ready.include?(@stop_io)

          data = @socket.read_nonblock(64 * 1024, exception: false)
          return false if data.nil?

          @buf << data unless data == :wait_readable
          true
        end
      end
    end
  end
end
