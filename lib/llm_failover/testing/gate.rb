# frozen_string_literal: true

require_relative "http_io"

module LlmFailover
  module Testing
    class FakeProvider
      # What FakeProvider#hold and #release work with: while held, every connection
      # waits in #wait before answering; released, the pipe stays readable for good, so
      # later requests pass at once.
      class Gate
        def initialize
          @mutex = Mutex.new
          @read = @write = nil
          @open = true
        end

        # Closes the gate (a new pipe, unless it is already closed).
        # @return [void]
        def hold
          @mutex.synchronize do
            @read, @write = IO.pipe unless @read && !@open
            @open = false
          end
        end

        # Opens the gate: the held connections and every later one pass.
        # @return [void]
        def release
          @mutex.synchronize do
            @open = true
            @write&.write_nonblock("x", exception: false) # readable for good
          end
        end

        # Waits while the gate is closed, waking at once (with Stopped) when +stop+ (the
        # server's stop pipe) becomes readable.
        # @param stop [IO]
        # @return [void]
        def wait(stop)
          gate = @mutex.synchronize { @open ? nil : @read }
          return unless gate

          ready, = IO.select([gate, stop])
          raise Stopped if ready.include?(stop)
        end

        # Closes the pipe (the server stopped); a later #hold makes a new one.
        # @return [void]
        def close
          @mutex.synchronize do
            [@read, @write].compact.each do |io|
              io.close
            rescue IOError
              nil
            end
            @read = @write = nil
          end
        end
      end
    end
  end
end
