# frozen_string_literal: true

require "spec_helper"

# Each host a provider can be (OpenAI's Responses API, Azure in each layout, Bedrock signed
# and with an API key, Gemini on Google AI, Gemini and Claude on Vertex AI), through the gem, against a strict
# FakeProvider on loopback: what a user sees of a plain answer, a stream, a stream cut
# mid-way, JSON mode, usage, errors by class, and tools across a failover to and from
# another protocol (each tool run exactly once, reasoning state kept by its host only).
RSpec.describe "Hosts through the gem" do
  # The tool every example's tool turns call, counting its runs.
  class HostsSpecWeather < LlmFailover::Tool
    tool_name "weather"
    description "Current weather for a city"
    param :city, type: :string, desc: "City name"
    @runs = Queue.new

    class << self
      attr_reader :runs
    end

    def execute(city:)
      self.class.runs << city
      { temp: 21 }
    end
  end

  key = "hs-test-SECRET-key-0042"
  aws = { access_key_id: "AKIDHOSTSSPEC0042", secret_access_key: "hosts/spec+SECRET", session_token: "hs-SESSION-token" }
    .freeze

  # name => how it is configured (base_url comes from the fake: fake_api), the model a
  # chat asks, the protocol it is spoken in, what the request must look like, and the
  # reasoning state its answers carry (nil: none); fake: the FakeProvider's own options
  # (a Bedrock fake that checks signatures); named_model: false for a host whose answer
  # names no model (reply.response_model is then the id it was asked).
  hosts = {
    "OpenAI's Responses API" => {
      options: { api: :responses, api_key: key, encrypted_reasoning: true }, fake_api: :responses,
      model: "gpt-5", protocol: :responses, path: %r{\A/providers/host/v1/responses\z},
      auth: ["authorization", "Bearer #{key}"], reasoning: :responses
    },
    "Azure OpenAI v1, chat completions" => {
      options: { api: :azure, api_key: key }, fake_api: :azure, model: "gpt-4o", protocol: :openai,
      path: %r{\A/providers/host/openai/v1/chat/completions\z}, auth: ["api-key", key]
    },
    "Azure OpenAI v1, the Responses API" => {
      options: { api: :azure, azure_api: :responses, api_key: key, encrypted_reasoning: [/\Agpt-5/] },
      fake_api: :azure, model: "gpt-5", protocol: :responses, path: %r{\A/providers/host/openai/v1/responses\z},
      auth: ["api-key", key], reasoning: :responses
    },
    "an Azure deployment with an Entra ID token" => {
      options: { api: :azure, api_version: "2024-10-21", access_token: -> { { token: key, expires_in: 3600 } } },
      fake_api: :azure, model: "my-gpt-4o", protocol: :openai,
      path: %r{\A/providers/host/openai/deployments/my-gpt-4o/chat/completions\?api-version=2024-10-21\z},
      auth: ["authorization", "Bearer #{key}"]
    },
    "Azure AI Foundry" => {
      options: { api: :azure, api_version: "2024-05-01-preview", api_key: key }, fake_api: :azure_foundry,
      model: "Mistral-Large-2411", protocol: :openai,
      path: %r{\A/providers/host/models/chat/completions\?api-version=2024-05-01-preview\z}, auth: ["api-key", key]
    },
    "Bedrock Converse, signed with SigV4 and a session token" => {
      options: { api: :bedrock, region: "us-east-1", credentials: aws }, fake_api: :bedrock,
      fake: { aws_credentials: { aws[:access_key_id] => aws.slice(:secret_access_key, :session_token) } },
      model: "us.anthropic.claude-sonnet-4-5-20250929-v1:0", protocol: :bedrock, named_model: false,
      path: %r{\A/providers/host/model/us\.anthropic\.claude-sonnet-4-5-20250929-v1%3A0/converse(-stream)?\z},
      auth: ["x-amz-security-token", aws[:session_token]]
    },
    "Bedrock Converse with a Bedrock API key" => {
      options: { api: :bedrock, region: "us-west-2", api_key: key }, fake_api: :bedrock,
      model: "amazon.nova-pro-v1:0", protocol: :bedrock, named_model: false,
      path: %r{\A/providers/host/model/amazon\.nova-pro-v1%3A0/converse(-stream)?\z},
      auth: ["authorization", "Bearer #{key}"]
    },
    "Gemini on Google AI" => {
      options: { api: :gemini, api_key: key }, fake_api: :gemini, model: "gemini-2.5-flash", protocol: :gemini,
      path: %r{\A/providers/host/v1beta/models/gemini-2\.5-flash:(generateContent|streamGenerateContent\?alt=sse)\z},
      auth: ["x-goog-api-key", key], reasoning: :gemini
    },
    "Gemini on Vertex AI" => {
      options: { api: :vertex, project: "hosts-spec", location: "us-east5",
                 access_token: -> { { token: key, expires_at: Time.now + 3600 } } },
      fake_api: :vertex, model: "gemini-2.5-pro", protocol: :gemini,
      path: %r{\A/providers/host/v1/projects/hosts-spec/locations/us-east5/publishers/google/models/gemini-2\.5-pro:},
      auth: ["authorization", "Bearer #{key}"], reasoning: :gemini
    },
    "Claude on Vertex AI" => {
      options: { api: :vertex, project: "hosts-spec", location: "us-east5", access_token: -> { key } },
      fake_api: :vertex, model: "claude-sonnet-4-5", protocol: :anthropic,
      path: %r{\A/providers/host/v1/projects/hosts-spec/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5:},
      auth: ["authorization", "Bearer #{key}"]
    }
  }

  # The class of the FakeProvider's in-stream error event (error_event_after:) in each
  # protocol: chat completions' and the Responses API's server_error, Anthropic's
  # overloaded_error, Converse's modelStreamErrorException (its originalStatusCode 500),
  # Gemini's UNAVAILABLE.
  stream_error_classes = {
    openai: "LlmFailover::ServerError", responses: "LlmFailover::ServerError",
    anthropic: "LlmFailover::OverloadedError", bedrock: "LlmFailover::ServerError",
    gemini: "LlmFailover::ServiceUnavailableError"
  }.freeze

  let(:fp) { start_fake_provider(strict_transcript: true) }
  let(:log) { StringIO.new }

  before do
    HostsSpecWeather.runs.clear
  end

  # Every string of a request's body the fake made as reasoning state (SealedState).
  def sealed_state(request)
    strings = ->(v) { v.is_a?(Hash) ? v.values.flat_map(&strings) : v.is_a?(Array) ? v.flat_map(&strings) : [v] }
    strings.call(request.json).select { |s| LlmFailover::Testing::FakeProvider::SealedState.read(s) }
  end

  hosts.each do |name, host|
    describe name do
      # The other protocol of a failover: Anthropic's messages, or chat completions for a
      # host that speaks Anthropic's.
      other_api = host[:protocol] == :anthropic ? :openai : :anthropic
      other_model = other_api == :anthropic ? "claude-sonnet-4-6" : "gpt-4o"

      before do
        LlmFailover.configure do |c|
          c.provider :host, **host[:options], base_url: fp.on(:host).base_url(host[:fake_api])
          c.provider :other, api: other_api, api_key: "other-SECRET-key-77", base_url: fp.on(:other).base_url(other_api)
          c.max_retries = 0
          c.logger = Logger.new(log)
          fast_policy(c)
        end
      end

      let(:model) { host[:model] }
      let(:fp) { start_fake_provider(strict_transcript: true, **host.fetch(:fake, {})) }

      def chat_on_host
        LlmFailover.chat(model: model, provider: :host, backup_model: other_model_name, backup_provider: :other)
      end

      def chat_from_other
        LlmFailover.chat(model: other_model_name, provider: :other, backup_model: model, backup_provider: :host)
      end

      define_method(:other_model_name) { other_model }

      it "answers with its usage and the model it says answered, at its own path with its credential" do
        fp.on(:host).enqueue({ text: "Bonjour", usage: { input: 12, output: 5 }, model: "#{model}-2025-01-01" })
        reply = chat_on_host.ask("Hi")
        expect([reply.content, reply.provider, reply.model, reply.response_model])
          .to eq(["Bonjour", :host, model, host[:named_model] == false ? model : "#{model}-2025-01-01"])
        expect([reply.input_tokens, reply.output_tokens, reply.failover?]).to eq([12, 5, false])
        request = fp.on(:host).requests.last
        expect([request.api, request.stream]).to eq([host[:protocol], false])
        expect(request.path).to match(host[:path])
        expect(request.headers[host[:auth][0]]).to eq(host[:auth][1])
      end

      it "counts the input its prompt cache served, streamed or not" do
        2.times { fp.on(:host).enqueue({ text: "Cached", usage: { input: 1200, output: 5, cached: 1024 } }) }
        [chat_on_host.ask("Hi"), chat_on_host.ask("Hi") { |_| }].each do |reply|
          record = reply.attempts.last
          expect([record.input_tokens, record.output_tokens, record.cached_input_tokens]).to eq([1200, 5, 1024])
        end
      end

      it "streams its answer" do
        fp.on(:host).enqueue({ text: "one two three four" })
        chunks = []
        reply = chat_on_host.ask("Hi") { |c| chunks << c }
        expect(chunks.map(&:content).join).to eq("one two three four")
        expect(chunks.size).to be > 1
        expect(chunks.map(&:provider).uniq).to eq([:host])
        expect(reply.content).to eq("one two three four")
        expect(fp.on(:host).requests.last.stream).to be(true)
      end

      it "fails over from a stream cut mid-way: the partial text reset, then the backup's" do
        fp.on(:host).enqueue({ text: "one two three four", cut_after: 2 })
        fp.on(:other).enqueue({ text: "the backup's answer" })
        chat = chat_on_host
        events = []
        reply = chat.ask("Hi") { |c| events << (c.reset? ? :reset : c.provider) }
        expect(events.chunk_while { |a, b| a == b }.map(&:first)).to eq(%i[host reset other])
        expect([reply.content, reply.provider, reply.failover?]).to eq(["the backup's answer", :other, true])
        expect(reply.attempts.map(&:error_class)).to eq(["LlmFailover::StreamInterruptedError", nil])
        expect(chat.messages.last.content).to eq("the backup's answer")
      end

      it "sends an image and a PDF in its own shape, and again to the other protocol when it fails over" do
        png = ("\x89PNG\r\n\x1A\n".b + "\x00\x00\x00\rIHDR".b + "pixels" * 10).freeze
        pdf = "%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\n%%EOF\n".b.freeze
        files = [{ data: png, mime_type: "image/png", filename: "chart.png" },
                 { data: pdf, mime_type: "application/pdf", filename: "report.pdf" }]
        fp.on(:host).enqueue({ text: "A chart and a report." }, { error: :unavailable })
        fp.on(:other).enqueue({ text: "Still a chart and a report." })
        expect(chat_on_host.ask("What are these?", with: files).content).to eq("A chart and a report.")
        expect(chat_on_host.ask("What are these?", with: files).provider).to eq(:other)
        [fp.on(:host).requests.first, fp.on(:other).requests.last].each do |request|
          expect(request.attachments.map { |f| [f.kind, f.mime_type, f.data] })
            .to eq([[:image, "image/png", png], [:document, "application/pdf", pdf]])
        end
      end

      it "answers in JSON mode" do
        fp.on(:host).enqueue({ json: { "city" => "Paris", "temp" => 21 } })
        reply = chat_on_host.ask("Weather as JSON", json: true)
        expect(reply.json).to eq({ "city" => "Paris", "temp" => 21 })
      end

      it "answers to a schema, streamed or not, and fails over an answer that breaks it" do
        schema = { type: "object", additionalProperties: false, required: %w[city days],
                   properties: { city: { type: "string" }, days: { type: "array", items: { type: "integer" } } } }
        paris = { "city" => "Paris", "days" => [1, 2] }
        fp.on(:host).enqueue({ json: paris }, { json: paris }, { json: { "city" => 7, "days" => [] } })
        fp.on(:other).enqueue({ json: paris })
        chat = chat_on_host.with_schema(schema, name: "trip")
        expect(chat.ask("Plan").json).to eq(paris)
        expect(chat.ask("Plan again") { |_| }.json).to eq(paris)
        reply = chat.ask("Plan once more")
        expect([reply.provider, reply.json]).to eq([:other, paris])
        expect(reply.attempts.first.error_message).to include("$.city: expected string, got integer")
      end

      it "raises a rejected credential at once: no retry, no backup to hide it" do
        LlmFailover.configuration.max_retries = 2
        fp.on(:host).enqueue({ error: :unauthorized })
        expect { chat_on_host.ask("Hi") }.to raise_error(LlmFailover::UnauthorizedError) { |e|
          expect(e.provider).to eq(:host)
        }
        expect([fp.on(:host).request_count, fp.on(:other).request_count]).to eq([1, 0])
      end

      it "fails over a server that is unavailable to the other protocol" do
        fp.on(:host).enqueue({ error: :unavailable })
        fp.on(:other).enqueue({ text: "from the backup" })
        reply = chat_on_host.ask("Hi")
        expect([reply.content, reply.provider]).to eq(["from the backup", :other])
        expect(reply.attempts.map(&:error_class)).to eq(["LlmFailover::ServiceUnavailableError", nil])
      end

      it "classifies an error event inside its stream and fails over to the other protocol, the partial text reset" do
        fp.on(:host).enqueue({ text: "one two three four", error_event_after: 1 })
        fp.on(:other).enqueue({ text: "the backup's answer" })
        events = []
        reply = chat_on_host.ask("Hi") { |c| events << (c.reset? ? :reset : c.provider) }
        expect(events.chunk_while { |a, b| a == b }.map(&:first)).to eq(%i[host reset other])
        expect([reply.content, reply.provider]).to eq(["the backup's answer", :other])
        expect(reply.attempts.map(&:error_class)).to eq([stream_error_classes.fetch(host[:protocol]), nil])
      end

      it "fails over a rate limit and a server error, each by its class" do
        { rate_limit: "LlmFailover::RateLimitError", server: "LlmFailover::ServerError" }.each do |error, raised|
          fp.on(:host).enqueue({ error: error })
          fp.on(:other).enqueue({ text: "from the backup" })
          reply = chat_on_host.ask("Hi")
          expect([reply.content, reply.provider]).to eq(["from the backup", :other])
          expect(reply.attempts.map(&:error_class)).to eq([raised, nil])
        end
      end

      it "raises a bad request, a too-long prompt and a refused one at once: never the backup" do
        LlmFailover.configuration.max_retries = 2
        { bad_request: LlmFailover::BadRequestError, context_length: LlmFailover::ContextLengthExceededError,
          content_policy: LlmFailover::ContentPolicyError,
          forbidden: LlmFailover::ForbiddenError }.each do |error, raised|
          # The fake's Anthropic wording for a refused prompt names no policy the classifier
          # knows (Anthropic has no such error type): a BadRequestError, never failed over all the same.
          raised = LlmFailover::BadRequestError if error == :content_policy && host[:protocol] == :anthropic
          fp.on(:host).enqueue({ error: error })
          sent = fp.on(:host).request_count
          expect { chat_on_host.ask("Hi") }.to raise_error(raised) { |e| expect(e.provider).to eq(:host) }
          expect(fp.on(:host).request_count).to eq(sent + 1)
        end
        expect(fp.on(:other).request_count).to eq(0)
      end

      it "runs its tool call once and finishes the turn on the other protocol, its reasoning state left behind" do
        fp.on(:host).enqueue({ thinking: "Look the weather up.",
                               tool_calls: [{ name: "weather", arguments: { "city" => "Paris" } }] },
                             { error: :unavailable })
        fp.on(:other).enqueue({ text: "It is 21 degrees in Paris." })
        chat = chat_on_host.with_tool(HostsSpecWeather)
        reply = chat.ask("Weather in Paris?")
        expect([reply.content, reply.provider]).to eq(["It is 21 degrees in Paris.", :other])
        expect(HostsSpecWeather.runs.size).to eq(1)
        sent = fp.on(:other).requests.last
        expect(sent.tool_results.map(&:content)).to eq(['{"temp":21}'])
        expect(sealed_state(sent)).to eq([])
        stored = chat.messages.find { |m| m.role == "assistant" && m.tool_calls.any? }
        expect(stored.reasoning_api).to eq(host[:reasoning]&.to_s)
        expect(stored.reasoning_origin).to eq(host[:reasoning] ? "host" : nil)
      end

      it "takes over a tool turn another protocol began, the call run once" do
        fp.on(:other).enqueue({ tool_calls: [{ name: "weather", arguments: { "city" => "Oslo" } }] },
                              { error: :unavailable })
        fp.on(:host).enqueue({ text: "It is 21 degrees in Oslo." })
        reply = chat_from_other.with_tool(HostsSpecWeather).ask("Weather in Oslo?")
        expect([reply.content, reply.provider]).to eq(["It is 21 degrees in Oslo.", :host])
        expect(HostsSpecWeather.runs.size).to eq(1)
        sent = fp.on(:host).requests.last
        expect(sent.tool_results.map(&:content)).to eq(['{"temp":21}'])
        expect(sealed_state(sent)).to eq([])
      end

      if host[:reasoning]
        it "sends its reasoning state back to itself on the next turn of a tool loop" do
          fp.on(:host).enqueue({ thinking: "Look the weather up.",
                                 tool_calls: [{ name: "weather", arguments: { "city" => "Rome" } }] },
                               { text: "It is 21 degrees in Rome." })
          reply = chat_on_host.with_tool(HostsSpecWeather).ask("Weather in Rome?")
          expect(reply.content).to eq("It is 21 degrees in Rome.")
          state = sealed_state(fp.on(:host).requests.last)
          expect(state).not_to be_empty
          expect(state).to all(satisfy { |s|
            LlmFailover::Testing::FakeProvider::SealedState.returns_to?(s, api: host[:reasoning], lane: :host)
          })
          expect(log.string).not_to include(*state)
        end
      end
    end
  end

  # Issue 35: tools across a failover in both directions between every two protocols.
  describe "a tool turn failing over between every two protocols" do
    # name => [how it is configured, the model asked, the reasoning state its answers carry]
    protocols = {
      openai: [{ api: :openai, api_key: key }, "gpt-4o", nil],
      anthropic: [{ api: :anthropic, api_key: key }, "claude-sonnet-4-6", nil],
      responses: [{ api: :responses, api_key: key, encrypted_reasoning: true }, "gpt-5", :responses],
      bedrock: [{ api: :bedrock, region: "us-east-1", credentials: aws },
                "us.anthropic.claude-sonnet-4-5-20250929-v1:0", nil],
      gemini: [{ api: :gemini, api_key: key }, "gemini-2.5-flash", :gemini]
    }

    let(:fp) do
      start_fake_provider(strict_transcript: true,
                          aws_credentials: { aws[:access_key_id] => aws.slice(:secret_access_key, :session_token) })
    end

    before do
      LlmFailover.configure do |c|
        protocols.each do |name, (options, _, _)|
          c.provider name, **options, base_url: fp.on(name).base_url(options[:api])
        end
        c.max_retries = 0
        fast_policy(c)
      end
    end

    protocols.keys.permutation(2).each do |from, to|
      it "runs the call once when a turn begun on #{from} ends on #{to}, #{from}'s reasoning state left behind" do
        fp.on(from).enqueue({ thinking: "Look the weather up.",
                              tool_calls: [{ name: "weather", arguments: { "city" => "Lima" } },
                                           { name: "weather", arguments: { "city" => "Quito" } }] },
                            { error: :unavailable })
        fp.on(to).enqueue({ text: "21 degrees in both." })
        chat = LlmFailover.chat(model: protocols[from][1], provider: from, backup_model: protocols[to][1],
                                backup_provider: to).with_tool(HostsSpecWeather)
        reply = chat.ask("Weather in Lima and Quito?")
        expect([reply.content, reply.provider]).to eq(["21 degrees in both.", to])
        expect(Array.new(HostsSpecWeather.runs.size) { HostsSpecWeather.runs.pop }).to contain_exactly("Lima", "Quito")
        sent = fp.on(to).requests.last
        expect(sent.tool_results.map(&:content)).to eq(['{"temp":21}'] * 2)
        expect(sealed_state(sent)).to eq([])
        expect(chat.messages.map(&:role)).to eq(%w[user assistant tool tool assistant])
        expect(chat.messages[1].reasoning_api).to eq(protocols[from][2]&.to_s)
      end
    end
  end

  # Issue 35: embeddings where the host has them (Gemini's batchEmbedContents, Azure's
  # /embeddings), one logical model through models:, refused up front where it has none.
  describe "embeddings" do
    # A FakeProvider each: their embeddings queues are their own.
    let(:gemini) { start_fake_provider }
    let(:azure) { start_fake_provider }

    before do
      LlmFailover.configure do |c|
        c.provider :gemini, api: :gemini, api_key: key, base_url: gemini.base_url(:gemini),
                            models: { "embedder" => "gemini-embedding-001" }
        c.provider :azure, api: :azure, api_key: key, base_url: azure.base_url(:azure),
                           models: { "embedder" => "text-embedding-3-small" }
        c.provider :bedrock, api: :bedrock, region: "us-east-1", api_key: key, base_url: gemini.base_url(:bedrock)
        c.provider :vertex, api: :vertex, project: "hosts-spec", location: "us-east5", access_token: key,
                            base_url: gemini.base_url(:vertex)
        c.pool :embedders, hosts: [{ provider: :gemini }, { provider: :azure }]
        c.max_retries = 0
        fast_policy(c)
      end
    end

    it "embeds on Gemini and on Azure, each asked its own id at its own path" do
      { gemini: [gemini, %r{/v1beta/models/gemini-embedding-001:batchEmbedContents\z}],
        azure: [azure, %r{/openai/v1/embeddings\z}] }.each do |name, (fake, path)|
        embeddings = LlmFailover.embed(%w[one two], model: "embedder", provider: name)
        expect([embeddings.vectors.size, embeddings.provider, embeddings.model]).to eq([2, name, "embedder"])
        expect(fake.requests.last.path).to match(path)
      end
    end

    it "fails over from one protocol's embeddings to the other's, and within a pool to a sibling" do
      gemini.enqueue_embeddings({ error: :unavailable })
      embeddings = LlmFailover.embed(%w[one], model: "embedder", provider: :gemini, backup_provider: :azure)
      expect(embeddings.provider).to eq(:azure)
      expect(embeddings.attempts.map(&:error_class)).to eq(["LlmFailover::ServiceUnavailableError", nil])
      # Gemini's next embeddings fail: the pool's call that goes to it first moves to Azure.
      gemini.enqueue_embeddings({ error: :unavailable })
      embeddings = nil
      50.times do
        embeddings = LlmFailover.embed(%w[one], model: "embedder", provider: :embedders)
        break if embeddings.attempts.size > 1
      end
      expect(embeddings.attempts.map(&:host)).to eq(%i[gemini azure])
      expect([embeddings.provider, embeddings.vectors.size]).to eq([:embedders, 1])
    end

    it "refuses embeddings on a host that has none, before any request" do
      %i[bedrock vertex].each do |name|
        expect { LlmFailover.embed(%w[one], model: "embedder", provider: name) }
          .to raise_error(LlmFailover::ConfigurationError, /embeddings need a provider that serves them/)
      end
      expect(gemini.request_count).to eq(0)
    end
  end
end
