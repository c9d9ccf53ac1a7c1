# frozen_string_literal: true

require "spec_helper"

# A pool whose hosts speak four protocols, joined by models: aliases (issue 37: "a pool
# may mix protocols"): Azure OpenAI (chat completions), OpenAI's Responses API, Bedrock
# Converse (signed, the signature checked by the FakeProvider) and Gemini on Vertex AI
# (a token source). One logical model, "frontier"; each host asked its own id. What the
# pool promises between hosts of one protocol (pool_spec) must hold across protocols:
# splits, moves to a sibling, stream resets, tool turns, credentials and costs per host.
RSpec.describe "A pool mixing protocols" do
  class PoolProtocolsWeather < LlmFailover::Tool
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

  aws = { access_key_id: "AKIDPOOLPROTO0042", secret_access_key: "pool/proto+SECRET" }.freeze
  hosts = %i[azure responses bedrock vertex].freeze
  # The protocol each host is spoken in (the FakeProvider's request.api), and its id for "frontier".
  protocols = { azure: :openai, responses: :responses, bedrock: :bedrock, vertex: :gemini }.freeze
  ids = { azure: "gpt-4o", responses: "gpt-5", bedrock: "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
          vertex: "gemini-2.5-pro" }.freeze
  # The reasoning state each host's answers carry (SealedState's api), nil: none.
  reasoning = { responses: :responses, vertex: :gemini }.freeze
  # Each host's price per million tokens, input and output.
  prices = { azure: [2.50, 10.00], responses: [1.25, 10.00], bedrock: [3.00, 15.00], vertex: [1.25, 10.00] }.freeze

  let(:fp) do
    start_fake_provider(strict_transcript: true,
                        aws_credentials: { aws[:access_key_id] => aws[:secret_access_key] })
  end
  let(:pool_hosts) { hosts }
  let(:tokens_asked) { Queue.new }
  # The Vertex host's token source: each answer a new token, valid for an hour.
  let(:token_source) do
    lambda do
      tokens_asked << true
      { token: "ya29.pool-proto-SECRET-#{tokens_asked.size}", expires_in: 3600 }
    end
  end

  before do
    PoolProtocolsWeather.runs.clear
    source = token_source
    LlmFailover.configure do |c|
      c.provider :azure, api: :azure, api_key: "az-pool-SECRET-0042", base_url: fp.on(:azure).base_url(:azure),
                         models: { "frontier" => ids[:azure] }
      c.provider :responses, api: :responses, api_key: "sk-pool-SECRET-0042", encrypted_reasoning: true,
                             base_url: fp.on(:responses).base_url(:responses), models: { "frontier" => ids[:responses] }
      c.provider :bedrock, api: :bedrock, region: "us-east-1", credentials: aws,
                           base_url: fp.on(:bedrock).base_url(:bedrock), models: { "frontier" => ids[:bedrock] }
      c.provider :vertex, api: :vertex, project: "pool-proto", location: "us-east5", access_token: source,
                          base_url: fp.on(:vertex).base_url(:vertex), models: { "frontier" => ids[:vertex] }
      c.provider :backup, api: :anthropic, api_key: "sk-ant-pool-SECRET", base_url: fp.on(:backup).base_url(:anthropic)
      c.pool :frontier, hosts: hosts.map { |h| { provider: h } }
      # Azure's and Vertex AI's by the host's own id, the others' by the logical name.
      prices.each do |h, (input, output)|
        c.price h, %i[azure vertex].include?(h) ? ids[h] : "frontier", input: input, output: output
      end
      c.max_retries = 3
      fast_policy(c)
    end
  end

  # A pool of the four whose first pick is +first+ but for one call in a million (the
  # others' weights are a millionth of its), so that an example knows where a call starts.
  def first(host)
    LlmFailover.configure do |c|
      c.pool :led, hosts: pool_hosts.map { |h| { provider: h, weight: h == host ? 1_000_000 : 1 } }
    end
    LlmFailover.chat(model: "frontier", provider: :led, backup_model: "claude-sonnet-4-6", backup_provider: :backup)
  end

  def pool_chat
    LlmFailover.chat(model: "frontier", provider: :frontier, backup_model: "claude-sonnet-4-6",
                     backup_provider: :backup)
  end

  def requests_to(names)
    names.sum { |h| fp.on(h).request_count }
  end

  # Every string of a request's body the fake made as reasoning state (SealedState).
  def sealed_state(request)
    strings = ->(v) { v.is_a?(Hash) ? v.values.flat_map(&strings) : v.is_a?(Array) ? v.flat_map(&strings) : [v] }
    strings.call(request.json).select { |s| LlmFailover::Testing::FakeProvider::SealedState.read(s) }
  end

  it "splits calls by weight across the protocols, each host asked its own id in its own protocol" do
    replies = Array.new(400) { pool_chat.ask("hello") }
    shares = replies.map(&:host).tally
    expect(shares.keys).to match_array(hosts)
    hosts.each { |h| expect(shares[h] / 400.0).to be_within(0.08).of(0.25) }
    expect(replies.map(&:model).uniq).to eq(["frontier"])
    # reply.response_model: the host's own (Bedrock names none: the id it was asked).
    expect(replies.group_by(&:host).transform_values { |r| r.map(&:response_model).uniq })
      .to eq(ids.transform_values { |id| [id] })
    expect(replies.flat_map(&:attempts).map(&:model).uniq).to eq(["frontier"])
    hosts.each do |h|
      request = fp.on(h).requests.last
      expect(request.api).to eq(protocols[h])
      expect(request.json["model"]).to eq(ids[h]) if %i[azure responses].include?(h)
      expect(request.path).to include(ids[h].sub(":", "%3A")) if h == :bedrock
      expect(request.path).to include("/models/#{ids[h]}:") if h == :vertex
    end
    expect(fp.on(:backup).request_count).to eq(0)
  end

  it "signs each Bedrock request (the fake checks SigV4) and raises a bad signature, never hiding it" do
    first(:bedrock).ask("hello")
    expect(fp.on(:bedrock).requests.last.headers["authorization"])
      .to start_with("AWS4-HMAC-SHA256 Credential=#{aws[:access_key_id]}/")
    LlmFailover.configure do |c|
      c.provider :bedrock, api: :bedrock, region: "us-east-1",
                           credentials: aws.merge(secret_access_key: "wrong/SECRET"),
                           base_url: fp.on(:bedrock).base_url(:bedrock), models: { "frontier" => ids[:bedrock] }
    end
    others = requests_to(hosts - [:bedrock] + [:backup])
    # AWS's InvalidSignatureException: a credential it does not accept.
    expect { first(:bedrock).ask("hello") }.to raise_error(LlmFailover::UnauthorizedError) { |e|
      expect(e.attempts.map(&:host)).to eq([:bedrock])
      expect(e.message).not_to include("wrong/SECRET")
    }
    expect(requests_to(hosts - [:bedrock] + [:backup])).to eq(others)
  end

  hosts.each do |host|
    describe "a call that starts on the #{host} host" do
      [false, true].each do |streamed|
        it "moves a retryable failure to a sibling of another protocol#{' (streamed)' if streamed}" do
          fp.on(host).enqueue({ error: :unavailable })
          block = streamed ? ->(_) {} : nil
          reply = first(host).ask("hello", &block)
          expect(reply.attempts.map(&:host).first(2)).to eq([host, reply.host])
          expect(reply.host).not_to eq(host)
          expect(fp.on(reply.host).requests.last.api).not_to eq(protocols[host])
          expect(fp.on(reply.host).requests.last.stream).to be(streamed)
          expect([reply.failover?, reply.attempts.first.error_class])
            .to eq([false, "LlmFailover::ServiceUnavailableError"])
          expect(fp.on(:backup).request_count).to eq(0)
        end
      end

      it "withdraws a cut stream's words before a sibling of another protocol answers" do
        fp.on(host).enqueue({ text: "one two three four five", cut_after: 2 })
        chat = first(host)
        chunks, block = collect_chunks
        reply = chat.ask("hello", &block)
        expect(reply.host).not_to eq(host)
        expect(reply.attempts.first.error_class).to eq("LlmFailover::StreamInterruptedError")
        before_reset = chunks.take_while { |c| !c.reset? }
        expect(before_reset.map(&:content).join).not_to be_empty
        expect("one two three four five").to start_with(before_reset.map(&:content).join)
        expect(chunks.count(&:reset?)).to eq(1)
        expect(chunks.drop_while { |c| !c.reset? }.drop(1).map(&:content).join).to eq(reply.content)
        expect(chat.messages.last.content).to eq(reply.content)
      end

      it "moves a stream that failed with an error event to a sibling of another protocol" do
        fp.on(host).enqueue({ text: "one two three four five", error_event_after: 1 })
        chunks, block = collect_chunks
        reply = first(host).ask("hello", &block)
        expect(reply.attempts.map(&:host).first(2)).to eq([host, reply.host])
        # Chat completions', Responses' and Converse's error events say a server error, Gemini's UNAVAILABLE.
        expect(reply.attempts.first.error_class)
          .to eq(host == :vertex ? "LlmFailover::ServiceUnavailableError" : "LlmFailover::ServerError")
        expect(chunks.drop_while { |c| !c.reset? }.drop(1).map(&:content).join).to eq(reply.content)
        expect([reply.failover?, fp.on(:backup).request_count]).to eq([false, 0])
      end

      it "sends a too-long prompt to the backup, not to a sibling (failover_on_context_length)" do
        LlmFailover.configure { |c| c.failover_on_context_length = true }
        fp.on(host).enqueue({ error: :context_length })
        others = requests_to(hosts - [host])
        reply = first(host).ask("hello")
        expect([reply.host, reply.failover?]).to eq([:backup, true])
        expect(reply.attempts.map(&:error_class)).to eq(["LlmFailover::ContextLengthExceededError", nil])
        expect(requests_to(hosts - [host])).to eq(others)
      end

      it "raises a rejected credential or a bad request, never answered by a sibling or the backup" do
        { unauthorized: LlmFailover::UnauthorizedError, forbidden: LlmFailover::ForbiddenError,
          bad_request: LlmFailover::BadRequestError }.each do |error, raised|
          fp.on(host).enqueue({ error: error })
          others = requests_to(hosts - [host] + [:backup])
          expect { first(host).ask("hello") }.to raise_error(raised) { |e|
            expect(e.attempts.map(&:host)).to eq([host])
          }
          expect(requests_to(hosts - [host] + [:backup])).to eq(others)
        end
      end

      it "keeps a tool loop's turns on its host#{', its reasoning state sent back to it' if reasoning[host]}" do
        fp.on(host).enqueue({ thinking: "Look the weather up.",
                              tool_calls: [{ name: "weather", arguments: { "city" => "Rome" } }] },
                            { text: "It is 21 degrees in Rome." })
        reply = first(host).with_tool(PoolProtocolsWeather).ask("Weather in Rome?")
        expect([reply.content, reply.host]).to eq(["It is 21 degrees in Rome.", host])
        expect(reply.attempts.map(&:host)).to eq([host, host])
        expect(PoolProtocolsWeather.runs.size).to eq(1)
        state = sealed_state(fp.on(host).requests.last)
        if reasoning[host]
          expect(state).not_to be_empty
          expect(state).to all(satisfy { |s|
            LlmFailover::Testing::FakeProvider::SealedState.returns_to?(s, api: reasoning[host], lane: host)
          })
        else
          expect(state).to eq([])
        end
      end

      it "finishes a tool turn that moves to another protocol without its reasoning state, the tool run once" do
        fp.on(host).enqueue({ thinking: "Look the weather up.",
                              tool_calls: [{ name: "weather", arguments: { "city" => "Paris" } }] },
                            { error: :unavailable })
        (hosts - [host]).each { |h| fp.on(h).default = { text: "It is 21 degrees in Paris." } }
        chat = first(host).with_tool(PoolProtocolsWeather)
        reply = chat.ask("Weather in Paris?")
        expect(reply.content).to eq("It is 21 degrees in Paris.")
        expect(reply.host).not_to eq(host)
        expect(PoolProtocolsWeather.runs.size).to eq(1)
        sent = fp.on(reply.host).requests.last
        expect(sent.api).not_to eq(protocols[host])
        expect(sent.tool_results.map(&:content)).to eq(['{"temp":21}'])
        expect(sealed_state(sent)).to eq([])
        stored = chat.messages.find { |m| m.role == "assistant" && m.tool_calls.any? }
        expect(stored.reasoning_api).to eq(reasoning[host]&.to_s)
        expect(chat.messages.map(&:role)).to eq(%w[user assistant tool assistant])
        expect(fp.on(:backup).request_count).to eq(0)
      end
    end
  end

  it "cools a Gemini host for the wait its 429 names in the body (RetryInfo): its siblings take the calls" do
    fp.on(:vertex).enqueue({ error: :rate_limit, retry_after: 60 })
    chat = first(:vertex)
    reply = chat.ask("hello")
    expect(reply.attempts.map(&:host).first(2)).to eq([:vertex, reply.host])
    expect(reply.attempts.first.error_class).to eq("LlmFailover::RateLimitError")
    sent = fp.on(:vertex).request_count
    5.times { expect(first(:vertex).ask("hello").host).not_to eq(:vertex) }
    expect(fp.on(:vertex).request_count).to eq(sent)
    expect(fp.on(:backup).request_count).to eq(0)
  end

  it "drops reasoning state when a turn moves to another host of the same protocol (it is sealed to its host)" do
    LlmFailover.configure do |c|
      c.provider :azure_responses, api: :azure, azure_api: :responses, api_key: "az-pool-SECRET-0043",
                                   encrypted_reasoning: true, base_url: fp.on(:azure_responses).base_url(:azure),
                                   models: { "frontier" => "gpt-5" }
      c.pool :responses_two, hosts: [{ provider: :responses, weight: 1_000_000 }, { provider: :azure_responses }]
    end
    fp.on(:responses).enqueue({ thinking: "Look the weather up.",
                                tool_calls: [{ name: "weather", arguments: { "city" => "Oslo" } }] },
                              { error: :unavailable })
    fp.on(:azure_responses).enqueue({ text: "It is 21 degrees in Oslo." })
    chat = LlmFailover.chat(model: "frontier", provider: :responses_two).with_tool(PoolProtocolsWeather)
    reply = chat.ask("Weather in Oslo?")
    expect([reply.content, reply.host]).to eq(["It is 21 degrees in Oslo.", :azure_responses])
    sent = fp.on(:azure_responses).requests.last
    expect(sent.api).to eq(:responses)
    expect(sent.tool_results.map(&:content)).to eq(['{"temp":21}'])
    expect(sealed_state(sent)).to eq([])
    expect(PoolProtocolsWeather.runs.size).to eq(1)
  end

  it "raises a host's failing token source as a ConfigurationError naming it, never a sibling's answer" do
    LlmFailover.configure do |c|
      c.provider :vertex, api: :vertex, project: "pool-proto", location: "us-east5",
                          access_token: -> { raise IOError, "metadata server unreachable" },
                          base_url: fp.on(:vertex).base_url(:vertex), models: { "frontier" => ids[:vertex] }
    end
    expect { first(:vertex).ask("hello") }
      .to raise_error(LlmFailover::ConfigurationError, /provider :vertex: the access_token: source raised IOError/)
    expect(requests_to(hosts + [:backup])).to eq(0)
    expect(first(:bedrock).ask("hello").host).to eq(:bedrock) # a call the broken host is not asked for
  end

  it "asks the Vertex host's token source once for many calls, and once more when its token is renewed" do
    chat = first(:vertex)
    pool = LlmFailover.configuration.pools[:led]
    10.times { expect(chat.ask("hello").host).to eq(:vertex) }
    expect(tokens_asked.size).to eq(1)
    target = pool.target("frontier")
    expect(pool.target("frontier")).to equal(target) # nothing rebuilt per call
    expect(fp.on(:vertex).requests.map { |r| r.headers["authorization"] }.uniq)
      .to eq(["Bearer ya29.pool-proto-SECRET-1"])
  end

  it "rebuilds the pool's target when a host's token is renewed, and sends the new token" do
    asked = tokens_asked
    # The first token is already inside the refresh margin: the next call asks again.
    LlmFailover.configure do |c|
      c.provider :vertex, api: :vertex, project: "pool-proto", location: "us-east5",
                          access_token: lambda {
                            asked << true
                            { token: "ya29.pool-proto-SECRET-#{asked.size}", expires_in: asked.size == 1 ? 30 : 3600 }
                          },
                          base_url: fp.on(:vertex).base_url(:vertex), models: { "frontier" => ids[:vertex] }
    end
    chat = first(:vertex) # its target holds the first token, stale at once
    expect(asked.size).to eq(1)
    6.times { expect(chat.ask("hello").host).to eq(:vertex) }
    expect(asked.size).to eq(2)
    pool = LlmFailover.configuration.pools[:led]
    expect(pool.target("frontier")).to equal(pool.target("frontier"))
    expect(fp.on(:vertex).requests.map { |r| r.headers["authorization"] })
      .to eq(["Bearer ya29.pool-proto-SECRET-2"] * 6)
  end

  it "prices each attempt at the host that served it, and the pool at its dearest host" do
    hosts.each { |h| fp.on(h).default = { text: "priced", usage: { input: 1000, output: 100 } } }
    hosts.each do |host|
      record = first(host).ask("hello").attempts.last
      expect([record.provider, record.host, record.model]).to eq([:led, host, "frontier"])
      input, output = prices[host].map { |p| BigDecimal(p.to_s) }
      expect(record.cost).to eq((input * 1000 + output * 100) / 1_000_000)
    end
    pool_price = LlmFailover.configuration.pricing.for(LlmFailover.configuration.pools[:frontier].target("frontier"))
    expect([pool_price.input, pool_price.output]).to eq([BigDecimal("3.0"), BigDecimal("15.0")])
  end

  it "holds a shared dollar quota on a pool at its dearest host's price" do
    chat = LlmFailover.chat(model: "frontier", provider: :frontier, quota: 1, quota_by: :usd,
                            quota_key: "pool-proto-#{rand(1 << 30)}", max_tokens: 100)
    expect(hosts).to include(chat.ask("hello").host)
    expect { LlmFailover.configure { |c| c.pool :unpriced, hosts: [{ provider: :azure }, { provider: :backup }] } }
      .not_to raise_error
    expect { LlmFailover.chat(model: "frontier", provider: :unpriced, quota: 1, quota_by: :usd, quota_key: "k") }
      .to raise_error(LlmFailover::ConfigurationError, /needs a price for unpriced\/frontier/)
  end
end
