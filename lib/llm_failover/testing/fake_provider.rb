# frozen_string_literal: true

require "openssl"
require "socket"
require_relative "gate"
require_relative "step"
require_relative "fake_provider/connections"
require_relative "fake_provider/script"

module LlmFailover
  module Testing
    # A real HTTP/1.1 server on loopback that speaks OpenAI chat completions, Anthropic
    # messages, OpenAI's Responses API, Bedrock Converse and Google's Gemini
    # generateContent, streamed and not (Bedrock's ConverseStream as AWS's binary event
    # stream, its frames' CRCs right), at their own hosts' paths and at Azure's and Vertex
    # AI's (with the OAuth token exchange Vertex AI's credentials go through), and that a
    # test scripts request by request. The gem's C client talks to it through libcurl, so
    # it sees what a real provider would send: WebMock and friends cannot.
    #
    # Each request takes the next enqueued step; with the queue empty it gets {#default}.
    # A provider configured with `fp.on(:openai).base_url(:openai)` has a script of its own
    # ({Lane}): its requests take its steps first.
    # Every request is logged ({#requests}). Requests whose path does not end in
    # `/chat/completions`, `/embeddings`, `/messages`, `/responses`, Bedrock's
    # `/model/{id}/converse` and `/converse-stream`, a Google model's method
    # (`/models/M:generateContent`, `:streamGenerateContent`, `:batchEmbedContents`, Vertex
    # AI's `:rawPredict` and `:streamRawPredict` for Claude) or `/token` (or that are not
    # POSTs) get a 404 and take no step. A host that refuses a request before any answer
    # (Azure without its key, Vertex AI with a token it did not issue, AWS with a signature
    # that does not hold) refuses it in its own shape, and the request takes no step either.
    #
    # Responses (ResponsesAnswer): `base_url(:responses)`; every step works as on the other
    # protocols, a thinking: step adds a reasoning item whose encrypted_content a client must
    # send back from output_item.done or the response, never from output_item.added. Azure
    # (fake_provider/azure.rb): `base_url(:azure)` and `base_url(:azure_foundry)`, the key
    # checked in an api-key header (or an Entra ID bearer token), an api-version where the
    # path needs one.
    #
    # Reasoning state (SealedState): the Responses API's encrypted_content and Gemini's
    # thoughtSignature name the protocol and the lane that made them. With strict_transcript
    # such state sent back to another protocol or lane, or not final, is refused as the real
    # host refuses it (OpenAI's 400 invalid_encrypted_content, Gemini's "Corrupted thought
    # signature").
    #
    # @example In your own test suite (RSpec)
    #   require "llm_failover/testing"
    #
    #   RSpec.describe "Summaries" do
    #     around do |example|
    #       LlmFailover::Testing::FakeProvider.open do |fp|
    #         @fp = fp
    #         LlmFailover.configure do |c|
    #           c.provider :openai, api: :openai, api_key: "test", base_url: fp.base_url(:openai)
    #           c.provider :anthropic, api: :anthropic, api_key: "test", base_url: fp.base_url(:anthropic)
    #         end
    #         example.run
    #       end
    #     end
    #
    #     it "fails over when OpenAI is rate limited" do
    #       @fp.enqueue({ error: :rate_limit, retry_after: 120 },   # OpenAI: too long to wait
    #                   { text: "Hi from the backup" })             # Anthropic answers
    #       chat = LlmFailover.chat(model: "gpt-4o", provider: :openai,
    #                               backup_model: "claude-sonnet-4-6", backup_provider: :anthropic)
    #       expect(chat.ask("Hello").content).to eq("Hi from the backup")
    #       expect(@fp.requests.map(&:api)).to eq(%i[openai anthropic])
    #     end
    #   end
    #
    # @example Steps
    #   fp.enqueue({ text: "Hello world" })                        # healthy answer, streamed if asked
    #   fp.enqueue({ chunks: ["Hel", "lo"], usage: { input: 3, output: 2 } })
    #   fp.enqueue({ error: :overloaded })                         # 529 in the request's protocol
    #   fp.enqueue({ status: 502, body: "<html>Bad gateway</html>", headers: { "content-type" => "text/html" } })
    #   fp.enqueue({ text: "a b c d", cut_after: 2 })              # stream closes after two deltas
    #   fp.enqueue({ text: "a b c", stall_after: 1 })              # then silence until fp.stop
    #   fp.enqueue({ delay_first_token: 2 }, { error_event_after: 1 }, { reset: true })
    #   fp.enqueue({ fixture: "spec/fixtures/recorded/some_cassette.json", interaction: 0 })
    #   fp.enqueue({ raw: "not json", status: 200 })
    #   fp.enqueue({ tool_call: { "city" => "Paris" } })           # a tool call (the forced tool, else "answer")
    #   fp.enqueue({ tool_calls: [{ name: "weather", arguments: { "city" => "Paris" } },    # several calls
    #                             { name: "clock", arguments: "{\"tz\": ", id: "call_1" }] })  # String: verbatim
    #   fp.enqueue({ text: "Let me look.", tool_calls: [{ name: "weather", chunks: ['{"ci', 'ty":"Oslo"}'] }] })
    #   fp.enqueue({ tool_calls: [{ name: "weather", arguments: { "city" => "Oslo" } }], cut_after: 3 })
    #   fp.enqueue({ json: { "city" => "Paris" } })                # a forced tool call if asked, else JSON text
    #
    # With `FakeProvider.start(strict_transcript: true)` a request is first checked as a
    # strict provider checks it: every tool call followed by exactly one result, every
    # result after its call, ids each protocol takes. One that fails gets that provider's
    # 400 and takes no step. `fp.requests.last.tool_results` lists what a request sent back.
    #
    # Faults that act between stream events (`delay_first_token`, `cut_after`, `stall_after`,
    # `malformed_after`, `error_event_after`, `no_done`, `no_terminal`) apply to streamed
    # answers, counting text pieces and pieces of tool call arguments alike; `delay_headers`, `reset`, `close` and `headers` apply to every step, and
    # `chunk_delay` to every stream, recorded fixtures included.
    #
    # Gemini and Vertex AI (`base_url(:gemini)`, `base_url(:vertex)`): the same steps give
    # Google's answers (a call's thoughtSignature, thoughtsTokenCount with `usage: { thoughts: }`),
    # Google's error bodies (`retry_after:` goes into the body's RetryInfo, as Google puts it)
    # and its filters (`error: :content_policy` is a 200 whose prompt was blocked). The OAuth
    # token endpoint (POST .../token) answers from a queue of its own:
    #   fp.enqueue_tokens({ expires_in: 1 }, { error: :unauthorized })   # a short token, then invalid_grant
    # With `FakeProvider.start(check_tokens: true)` a Vertex AI request whose bearer token the
    # server did not issue, or saw expire, gets Vertex AI's 401. With
    # `FakeProvider.start(service_accounts: { email => public_key })` a service account's
    # token request (a signed JWT) is first checked as Google checks it (JwtGrant): one
    # whose signature, issuer, audience or lifetime does not hold gets its 400 invalid_grant.
    #
    # Bedrock (`base_url(:bedrock)`, BedrockAnswer): the same steps give Converse answers and
    # ConverseStream's event stream; an error step answers with the status and the
    # x-amzn-errortype header AWS sends (`error: :unauthorized` is its 403
    # UnrecognizedClientException), a malformed event is a frame whose CRC is wrong, an
    # in-stream error a modelStreamErrorException. With
    # `FakeProvider.start(aws_credentials: { "AKID" => "secret" })` a Bedrock request is first
    # checked as AWS checks its SigV4 signature (SigV4); one that fails gets AWS's 403
    # (InvalidSignatureException, UnrecognizedClientException, ...).
    #
    # Embeddings (POST .../embeddings, OpenAI-compatible) are answered deterministically
    # (EmbeddingAnswer: texts that share words get close vectors) and take their steps
    # from a queue of their own, {#enqueue_embeddings}, so that a semantic cache's
    # embedding requests never take a chat's scripted steps:
    #   fp.enqueue_embeddings({ error: :server }, { delay_headers: 2 })
    #
    # Its parts by job, beside it: Script (fake_provider/script.rb), Connections
    # (fake_provider/connections.rb), the hosts that are not a protocol's own: Azure
    # (fake_provider/azure.rb), Vertex AI (fake_provider/vertex.rb), AWS's signature
    # check (sig_v4.rb) and Google's service account assertions (jwt_grant.rb).
    class FakeProvider
      include Connections
      include Script

      DEFAULT_TEXT = "Hello from FakeProvider"
      EMBEDDINGS_DEFAULT = Step.new({})
      TOKEN_DEFAULT = Step.new({})

      # Errors a client can cause by going away; never worth a warning.
      QUIET_ERRORS = [IOError, EOFError, Errno::EPIPE, Errno::ECONNRESET, Errno::ECONNABORTED,
                      Errno::ENOTCONN, Errno::ESHUTDOWN, Errno::ETIMEDOUT, Errno::EBADF].freeze

      attr_reader :host, :port

      # Starts a server and returns it.
      # @return [FakeProvider]
      def self.start(**opts)
        new(**opts).start
      end

      # Starts a server, yields it and stops it when the block ends.
      # @return [Object] the block's value
      def self.open(**opts)
        fp = start(**opts)
        begin
          yield fp
        ensure
          fp.stop
        end
      end

      # @param host [String] address to listen on (loopback)
      # @param port [Integer] 0 picks a free port
      # @param reset_idle_after [Numeric, nil] seconds a keep-alive connection may wait for
      #   its next request before the server resets it (TCP RST), as load balancers do to
      #   idle connections; nil keeps them open
      # @param strict_transcript [Boolean] refuse, as Anthropic does, a request whose
      #   messages hold a tool call without exactly one result right after it, or a result
      #   without its call: a 400 in the request's protocol, and no step is taken
      # @param check_tokens [Boolean] refuse, as Vertex AI does, a request by Vertex AI's route
      #   whose bearer token this server did not issue or saw expire: a 401, and no step
      # @param aws_credentials [Hash, nil] access key id => secret access key (or
      #   { secret_access_key:, session_token: }): Bedrock requests must be signed with one
      #   of them (SigV4), as AWS wants; nil checks no signature
      # @param service_accounts [Hash, nil] a service account's client_email => its public
      #   key (an OpenSSL::PKey::RSA or PEM): a jwt-bearer token request must carry an
      #   assertion one of them signed (JwtGrant), as Google wants; nil checks none
      def initialize(host: "127.0.0.1", port: 0, reset_idle_after: nil, strict_transcript: false, check_tokens: false,
                     aws_credentials: nil, service_accounts: nil)
        unless reset_idle_after.nil? || (reset_idle_after.is_a?(Numeric) && reset_idle_after.positive?)
          raise ArgumentError, "reset_idle_after must be nil or a positive number, got #{reset_idle_after.inspect}"
        end

        @host = host
        @port = port
        @reset_idle_after = reset_idle_after
        self.strict_transcript = strict_transcript
        @check_tokens = check_tokens ? true : false
        unless aws_credentials.nil? || aws_credentials.is_a?(Hash)
          raise ArgumentError, "aws_credentials must be nil or a Hash of access key id => secret"
        end

        @aws_credentials = aws_credentials&.transform_keys(&:to_s)&.freeze
        @service_accounts = service_accounts&.to_h do |email, key|
          [email.to_s, key.is_a?(OpenSSL::PKey::PKey) ? key : OpenSSL::PKey::RSA.new(key)]
        end&.freeze
        @mutex = Mutex.new
        @queue = []
        @embed_queue = []
        @token_queue = []
        @lanes = {}
        @rate_limit = nil
        @requests = []
        @default_hash = { text: DEFAULT_TEXT }.freeze
        @default = Step.new(@default_hash)
        @connections = {}
        @gate = Gate.new
        @listener = nil
        @accept_thread = nil
        @stopped = false
      end

      # Binds and starts accepting; returns once the port is listening. Idempotent.
      # @return [self]
      def start
        @mutex.synchronize do
          return self if @listener

          @stop_r, @stop_w = IO.pipe
          @listener = TCPServer.new(@host, @port)
          @port = @listener.local_address.ip_port
          @stopped = false
        end
        @accept_thread = Thread.new { accept_loop }
        @accept_thread.report_on_exception = false
        self
      end

      # Closes the listener and every connection (stalled ones too) and joins the threads.
      # Idempotent.
      # @return [void]
      def stop
        listener, conns = @mutex.synchronize do
          return if @listener.nil? || @stopped

          @stopped = true
          @stop_w.write_nonblock("x", exception: false) # wakes every select and pause
          [@listener, @connections.dup]
        end
        quietly { listener.close }
        conns.each_key { |sock| quietly { sock.close } }
        threads = [@accept_thread, *conns.values].compact
        deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 2
        threads.each do |t|
          left = deadline - Process.clock_gettime(Process::CLOCK_MONOTONIC)
          t.join([left, 0].max) || t.kill # last resort: a thread stuck in a write
        end
        @mutex.synchronize do
          @listener = nil
          @connections.clear
          @gate.close
          quietly { @stop_r.close }
          quietly { @stop_w.close }
        end
        nil
      end

      # @return [Boolean] whether the server is accepting connections
      def running?
        @mutex.synchronize { !@listener.nil? && !@stopped }
      end

      # @return [String] e.g. "http://127.0.0.1:40123"
      def url
        h = @host.include?(":") ? "[#{@host}]" : @host
        "http://#{h}:#{@port}"
      end

      # The base_url a provider of that API should be configured with: :openai and
      # :responses (OpenAI's /v1), :anthropic, :bedrock (bedrock-runtime's root), :gemini,
      # :vertex (Gemini's and Vertex AI's paths hold their API version: /v1beta/models/...,
      # /v1/projects/...), :azure (an Azure OpenAI resource, under which the client puts
      # /openai/v1/... or /openai/deployments/...) and :azure_foundry (AI Foundry's /models).
      # @param api [Symbol]
      # @return [String]
      def base_url(api)
        case api.to_sym
        when :openai, :responses then "#{url}/v1"
        when :anthropic, :bedrock, :gemini, :vertex, :azure then url
        when :azure_foundry then "#{url}/models"
        else raise ArgumentError, "FakeProvider speaks :openai, :responses, :anthropic, :bedrock, :gemini, :vertex, " \
                                  ":azure and :azure_foundry, not #{api.inspect}"
        end
      end

      # The URL of its OAuth token endpoint (Google's oauth2.googleapis.com/token), where
      # Vertex AI's credentials get their access tokens.
      # @return [String]
      def token_url
        "#{url}/token"
      end

      # @return [Integer] client connections currently open
      def connection_count
        @mutex.synchronize { @connections.size }
      end

      # @api private: the server's lock, which its lanes share
      def synchronize(&block)
        @mutex.synchronize(&block)
      end

      def inspect
        "#<#{self.class.name} #{url} queued=#{queue_size} requests=#{request_count}>"
      end
      alias to_s inspect
    end
  end
end
