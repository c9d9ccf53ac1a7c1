# frozen_string_literal: true

require "json"
require "socket"
require_relative "../http_io"
require_relative "../request"
require_relative "../responder"
require_relative "../jwt_grant"
require_relative "../sig_v4"
require_relative "../step"
require_relative "../transcript"
require_relative "azure"
require_relative "vertex"

module LlmFailover
  module Testing
    class FakeProvider
      # FakeProvider's connections (included in it): accepting them, serving each
      # request on its thread, routing a request to its step (a host's refusal, a lane's,
      # the queue's, the embeddings or token queue's, the default) and the 404 and 400
      # answers.
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
        # concurrent requests take steps in the order they are logged): a token request
        # from the token queue, embeddings from theirs, the rest a rate limit's 429 when
        # its lane's (or the server's) window is spent, else from its lane's, the shared
        # queue, the defaults. A request its host refuses (refusal_of) takes no step: the
        # script is about answers.
        def take_step(request)
          refusal = refusal_of(request)
          @mutex.synchronize do
            @requests << request
            next nil unless request.api
            next Step.new(refusal) if refusal
            next @token_queue.shift || TOKEN_DEFAULT if request.token?
            next @embed_queue.shift || EMBEDDINGS_DEFAULT if request.embeddings?

            lane = request.lane && @lanes[request.lane]
            limited(request, lane ? lane.rate_limiter : @rate_limit) ||
              lane&.shift || @queue.shift || lane&.default_step || @default
          end
        end

        # A rate-limited host's headers on the request's answer, and its 429 when the
        # window has nothing left (then the request takes no step).
        def limited(request, limit)
          return nil unless limit

          request.rate_headers, refused = limit.take(request)
          refused
        end

        # What answers a request before any step, in its host's own shape: Azure's 401
        # without a credential or 404 without an api-version, Vertex AI's 401 for a token
        # this server did not issue (check_tokens), AWS's 403 for a SigV4 signature that
        # does not hold (aws_credentials), Google's 400 for a service account's assertion
        # that does not (service_accounts), a strict provider's 400 for a broken transcript
        # (strict_transcript).
        def refusal_of(request)
          return nil if request.api.nil?
          if request.token?
            return JwtGrant.refusal(request, accounts: @service_accounts, audience: "#{url}#{request.path.split('?', 2).first}")
          end

          refusal = Azure.refusal(request) || Vertex.refusal(request, check_tokens: @check_tokens) ||
                    SigV4.refusal(request, credentials: @aws_credentials)
          return refusal if refusal || !@strict_transcript || request.embeddings?

          Transcript.new(request.api, request.json, request: request).rejection
        end

        def not_found(io, request)
          body = JSON.generate("error" => { "message" => "FakeProvider: no route for #{request.method} #{request.path} " \
                                                         "(POST .../chat/completions, .../embeddings, .../messages, " \
                                                         ".../responses, .../model/ID/converse[-stream], " \
                                                         ".../models/M:generateContent and the like, or .../token)",
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
