# frozen_string_literal: true

require "json"
require "socket"
require_relative "../http_io"
require_relative "../request"
require_relative "../responder"
require_relative "../sig_v4"
require_relative "../step"
require_relative "../transcript"

module LlmFailover
  module Testing
    class FakeProvider
      # FakeProvider's connections (included in it): accepting them, serving each
      # request on its thread, routing a request to its step (a lane's, the queue's,
      # the embeddings queue's, the default) and the 404 and 400 answers.
      module Connections
        private

        def accept_loop
          loop do
            ready, = IO.select([@listener, @stop_r])
            break if ready.include?(@stop_r)

            sock = @listener.accept_nonblock(exception: false)
            next if sock == :wait_readable

            @mutex.synchronize do
              if @stopped
                quietly { sock.close }
                break
              end
              @connections[sock] = Thread.new(sock) { |s| serve_connection(s) }
            end
          end
        rescue IOError, SystemCallError
          nil # the listener was closed by #stop
        end

        def serve_connection(sock)
          Thread.current.report_on_exception = false
          sock.setsockopt(Socket::IPPROTO_TCP, Socket::TCP_NODELAY, 1)
          io = HttpIO.new(sock, @stop_r)
          current = nil
          loop do
            return io.reset! if @reset_idle_after && !io.wait_for_request(@reset_idle_after)

            parts = io.read_request
            break if parts.nil?

            current = Request.parse(*parts)
            step = take_step(current)
            @gate.wait(@stop_r)
            outcome = step ? Responder.new(io, current, step, method(:pause)).serve : not_found(io, current)
            break unless outcome == :keep
          end
        rescue BadRequest => e
          quietly { bad_request(io, e.message) }
        rescue Stopped, *QUIET_ERRORS
          nil
        rescue StandardError => e
          # A bug in the fake, not the client's doing: say so once, without a backtrace.
          what = current ? "#{current.method} #{current.path}" : "a request"
          warn "#{self.class.name}: error while answering #{what}: #{e.class}: #{e.message}"
        ensure
          quietly { sock.close }
          @mutex.synchronize { @connections.delete(sock) }
        end

        # Logs the request and, when it is routed, hands it the next step (atomically, so
        # concurrent requests take steps in the order they are logged). A signature AWS
        # refuses, or a transcript a strict provider refuses, takes no step: the script is
        # about answers.
        def take_step(request)
          refusal = (SigV4.refusal(request, @aws_credentials) if @aws_credentials && request.api == :bedrock)
          refusal ||= (Transcript.new(request.api, request.json).rejection if @strict_transcript && request.api && !request.embeddings?)
          @mutex.synchronize do
            @requests << request
            next nil unless request.api
            next Step.new(refusal) if refusal
            next @embed_queue.shift || EMBEDDINGS_DEFAULT if request.embeddings?

            lane = request.lane && @lanes[request.lane]
            lane&.shift || @queue.shift || lane&.default_step || @default
          end
        end

        def not_found(io, request)
          body = JSON.generate("error" => { "message" => "FakeProvider: no route for #{request.method} #{request.path} " \
                                                         "(POST .../chat/completions, .../embeddings, .../messages or " \
                                                         ".../model/ID/converse[-stream])",
                                            "type" => "invalid_request_error", "param" => nil, "code" => "not_found" })
          io.write_head(404, [["Content-Type", "application/json"], ["Content-Length", body.bytesize.to_s],
                              ["Connection", "keep-alive"]])
          io.write(body)
          :keep
        end

        def bad_request(io, message)
          body = JSON.generate("error" => { "message" => "FakeProvider: #{message}", "type" => "invalid_request_error" })
          io.write_head(400, [["Content-Type", "application/json"], ["Content-Length", body.bytesize.to_s],
                              ["Connection", "close"]])
          io.write(body)
        end

        # With the answer's connection, the wait also ends when the client hangs up.
        def pause(seconds, io = nil)
          return io.pause(seconds) if io

          raise Stopped if IO.select([@stop_r], nil, nil, seconds)
        end

        def quietly
          yield
        rescue IOError, SystemCallError
          nil
        end
      end
    end
  end
end
