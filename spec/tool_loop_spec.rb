# frozen_string_literal: true

require "spec_helper"

# The tool loop end to end: Chat#with_tools, the engine's tool fields and tool-bearing
# messages, both protocols, streamed and not, across failover, against FakeProviders
# that refuse (strict_transcript) any transcript Anthropic would refuse.
RSpec.describe "The tool loop" do
  let(:primary) { start_fake_provider(strict_transcript: true) }
  let(:backup) { start_fake_provider(strict_transcript: true) }
  let(:runs) { Queue.new }

  before do
    LlmFailover.configure do |c|
      c.provider :openai, api: :openai, api_key: FakeProviderHelpers::PRIMARY_KEY, base_url: primary.base_url(:openai)
      c.provider :anthropic, api: :anthropic, api_key: FakeProviderHelpers::BACKUP_KEY,
                             base_url: backup.base_url(:anthropic)
      fast_policy(c)
      c.max_retries = 0
    end
  end

  # Tools that write every run to the example's queue.
  def weather_tool(runs)
    Class.new(LlmFailover::Tool) do
      tool_name "weather"
      description "Current weather for a city"
      param :city, type: :string, desc: "City name"
      param :unit, type: :string, enum: %w[c f], required: false
      define_method(:execute) do |city:, unit: "c"|
        runs << [:weather, city]
        { city: city, temp: 21, unit: unit }
      end
    end
  end

  def clock_tool(runs)
    Class.new(LlmFailover::Tool) do
      tool_name "clock"
      description "The time in a city"
      param :city, type: :string
      define_method(:execute) do |city:|
        runs << [:clock, city]
        "12:00 in #{city}"
      end
    end
  end

  def ran
    list = []
    list << runs.pop until runs.empty?
    list
  end

  def openai_chat(**options)
    LlmFailover.chat(model: "gpt-4o", provider: :openai, backup_model: "claude-sonnet-4-6",
                     backup_provider: :anthropic, **options).with_tools(weather_tool(runs), clock_tool(runs))
  end

  def anthropic_chat(**options)
    LlmFailover.chat(model: "claude-sonnet-4-6", provider: :anthropic, **options)
               .with_tools(weather_tool(runs), clock_tool(runs))
  end

  def ask(chat, text, stream)
    chunks = []
    reply = stream ? chat.ask(text) { |c| chunks << c } : chat.ask(text)
    [reply, chunks]
  end

  [[:openai, :primary], [:anthropic, :backup]].each do |api, server|
    [false, true].each do |stream|
      describe "on the #{api} protocol#{', streamed' if stream}" do
        let(:fp) { send(server) }
        let(:chat) { api == :openai ? openai_chat : anthropic_chat }

        it "runs one call, sends its result back and returns the answer without tool calls" do
          fp.enqueue({ text: "Let me look.", tool_calls: [{ name: "weather", arguments: { "city" => "Paris" } }] },
                     { text: "21 degrees in Paris" })
          reply, chunks = ask(chat, "Weather in Paris?", stream)

          expect(reply.content).to eq("21 degrees in Paris")
          expect(ran).to eq([[:weather, "Paris"]])
          expect(reply.tool_calls.size).to eq(1)
          call = reply.tool_calls.first
          expect([call.name, call.arguments, call.result, call.error, call.provider])
            .to eq(["weather", { "city" => "Paris" }, { city: "Paris", temp: 21, unit: "c" }, nil, api])
          expect(fp.request_count).to eq(2)
          results = fp.requests.last.tool_results
          expect(results.map { |r| [r.id, r.content, r.error] }).to eq([[call.id, '{"city":"Paris","temp":21,"unit":"c"}', false]])
          sent = fp.requests.last.tool_calls
          expect(sent.map(&:name)).to eq(["weather"])
          # The tools and the choice went with every turn.
          expect(fp.requests.map { |r| r.json["tools"].map { |t| t["name"] || t.dig("function", "name") } })
            .to all(eq(%w[weather clock]))
          expect(reply.attempts.size).to eq(2)
          expect(reply.attempts.map(&:request_id).uniq).to eq([reply.request_id])
          expect(reply.input_tokens).to eq(fp.requests.size * 10) if api == :openai
          if stream
            kinds = chunks.map { |c| c.tool_call? ? :call : (c.tool_result? ? :result : c.content) }
            expect(kinds.join("|")).to include("|call|result|")
            expect(chunks.select(&:tool_call?).map { |c| c.tool_call.arguments }).to eq([{ "city" => "Paris" }])
            expect(chunks.reject { |c| c.tool_call? || c.tool_result? }.map(&:content).join)
              .to eq("Let me look.21 degrees in Paris")
            expect(chunks.map(&:content).join).not_to include("city")
          end
          # Stored: the answer with its call, the result as a role "tool" message.
          roles = chat.messages.map(&:role)
          expect(roles).to eq(%w[user assistant tool assistant])
          expect(chat.messages[1].tool_calls.map { |c| [c.id, c.status] }).to eq([[call.id, :succeeded]])
          expect([chat.messages[2].tool_call_id, chat.messages[2].is_error]).to eq([call.id, false])
        end

        it "runs several calls of one turn in the order given, over several rounds" do
          fp.enqueue({ tool_calls: [{ name: "weather", arguments: { "city" => "Oslo" } },
                                    { name: "clock", arguments: { "city" => "Oslo" } }] },
                     { tool_calls: [{ name: "weather", arguments: { "city" => "Rome", "unit" => "f" } }] },
                     { text: "Done" })
          reply, = ask(chat, "Oslo and Rome?", stream)

          expect(reply.content).to eq("Done")
          expect(ran).to eq([[:weather, "Oslo"], [:clock, "Oslo"], [:weather, "Rome"]])
          expect(reply.tool_calls.map(&:name)).to eq(%w[weather clock weather])
          expect(reply.tool_calls.map(&:id).uniq.size).to eq(3)
          expect(fp.requests.map { |r| r.tool_results.size }).to eq([0, 2, 3])
          expect(reply.attempts.size).to eq(3)
        end
      end
    end
  end

  it "runs a turn's calls at once with concurrency: :threads, and asks for parallel calls" do
    started = Queue.new
    meet = Class.new(LlmFailover::Tool) do
      tool_name "meet"
      param :who, type: :string
      define_method(:execute) do |who:|
        started << who
        # Each waits until both have started: only calls run at once both see two.
        deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 5
        sleep 0.01 while started.size < 2 && Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
        "met #{started.size}"
      end
    end
    chat = LlmFailover.chat(model: "gpt-4o", provider: :openai).with_tools(meet, concurrency: :threads)
    primary.enqueue({ tool_calls: [{ name: "meet", arguments: { "who" => "a" } },
                                   { name: "meet", arguments: { "who" => "b" } }] }, { text: "ok" })
    reply = chat.ask("meet")
    expect(reply.tool_calls.map(&:result)).to eq(["met 2", "met 2"])
    expect(primary.requests.first.json["parallel_tool_calls"]).to be(true)
    # The results go back in the order of the calls, whichever finished first.
    expect(primary.requests.last.tool_results.map(&:id)).to eq(reply.tool_calls.map(&:id))
  end

  it "runs a turn's calls on fibers under a Fiber scheduler (Async) with concurrency: :threads" do
    require "async"
    started = []
    threads = []
    meet = Class.new(LlmFailover::Tool) do
      tool_name "meet"
      param :who, type: :string
      define_method(:execute) do |who:|
        started << who
        threads << Thread.current
        deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 5
        sleep 0.01 while started.size < 2 && Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
        "met #{started.size}"
      end
    end
    primary.enqueue({ tool_calls: [{ name: "meet", arguments: { "who" => "a" } },
                                   { name: "meet", arguments: { "who" => "b" } }] }, { text: "ok" })
    reply = nil
    caller = nil
    Async do
      caller = Thread.current
      reply = LlmFailover.chat(model: "gpt-4o", provider: :openai).with_tools(meet, concurrency: :threads).ask("meet")
    end.wait
    expect(reply.tool_calls.map(&:result)).to eq(["met 2", "met 2"])
    expect(threads).to eq([caller, caller])
  end

  describe "failover" do
    [false, true].each do |stream|
      it "goes from the OpenAI protocol to the Anthropic one between two turns and stays there#{' (streamed)' if stream}" do
        chat = openai_chat
        primary.enqueue({ tool_calls: [{ name: "weather", arguments: { "city" => "Paris" }, id: "call_" + "x" * 50 }] },
                        { error: :server })
        backup.enqueue({ tool_calls: [{ name: "clock", arguments: { "city" => "Paris" } }] }, { text: "21 and noon" })
        reply, = ask(chat, "Paris?", stream)

        expect(reply.content).to eq("21 and noon")
        expect(ran).to eq([[:weather, "Paris"], [:clock, "Paris"]]) # the weather tool ran once
        expect([reply.provider, reply.model]).to eq([:anthropic, "claude-sonnet-4-6"])
        expect(reply.failover?).to be(true)
        expect(reply.tool_calls.map(&:provider)).to eq(%i[openai anthropic])
        # The primary failed once, in turn 2; turn 3 went to the backup alone.
        expect(primary.request_count).to eq(2)
        expect(backup.request_count).to eq(2)
        # The OpenAI call id, too long for OpenAI itself and kept whole in the store,
        # was mapped for Anthropic, in the call and in its result alike (strict: paired).
        first = reply.tool_calls.first
        expect(first.id).to eq("call_" + "x" * 50)
        sent = backup.requests.first.tool_calls.first.id
        expect(sent).to match(/\A[A-Za-z0-9_-]{1,40}\z/)
        expect(backup.requests.first.tool_results.map(&:id)).to eq([sent])
        expect(reply.attempts.map(&:provider)).to eq(%i[openai openai anthropic anthropic])
        expect(reply.attempts.map(&:request_id).uniq).to eq([reply.request_id])
        # One number per attempt of the request (records keep request id and number unique).
        expect(reply.attempts.map(&:attempt)).to eq([1, 2, 3, 4])

        # The next ask starts on the primary again.
        primary.enqueue({ text: "back on the primary" })
        expect(chat.ask("Again?").provider).to eq(:openai)
      end

      it "fails over inside a turn cut while a tool call streams: the cut call never runs#{' (streamed)' if stream}" do
        chat = openai_chat
        if stream
          primary.enqueue({ tool_calls: [{ name: "weather", chunks: ['{"ci', 'ty":"Par', 'is"}'] }], cut_after: 2 })
        else
          primary.enqueue({ error: :overloaded })
        end
        backup.enqueue({ tool_calls: [{ name: "weather", arguments: { "city" => "Lyon" } }] }, { text: "Lyon it is" })
        reply, = ask(chat, "Weather?", stream)

        expect(reply.content).to eq("Lyon it is")
        expect(ran).to eq([[:weather, "Lyon"]])
        expect(primary.request_count).to eq(1)
        expect(reply.tool_calls.map(&:provider)).to eq([:anthropic])
        # The turn's one stored answer, reset when the backup took over, holds its call.
        expect(chat.messages.map(&:role)).to eq(%w[user assistant tool assistant])
        expect(chat.messages[1].tool_calls.map(&:provider)).to eq([:anthropic])
      end
    end

    it "runs nothing of a call cut mid-stream when no target is left" do
      chat = LlmFailover.chat(model: "gpt-4o", provider: :openai).with_tools(weather_tool(runs))
      primary.enqueue({ tool_calls: [{ name: "weather", chunks: ['{"ci', 'ty":"Par', 'is"}'] }], cut_after: 2 })
      expect { chat.ask("Weather?") { |_c| nil } }.to raise_error(LlmFailover::Error)
      expect(ran).to eq([])
      expect(chat.messages.map { |m| [m.role, m.status] }).to eq([%w[user complete], %w[assistant failed]])
    end
  end

  describe "bad calls go back to the model" do
    let(:chat) { openai_chat }

    it "answers arguments that are not JSON, miss a param, have a wrong type or an unknown enum, and an unknown tool" do
      primary.enqueue({ tool_calls: [{ name: "weather", arguments: '{"city": ' },
                                     { name: "weather", arguments: {} },
                                     { name: "weather", arguments: { "city" => 42 } },
                                     { name: "weather", arguments: { "city" => "Oslo", "unit" => "k" } },
                                     { name: "stock_price", arguments: { "ticker" => "X" } },
                                     { name: "weather", arguments: { "city" => "Oslo" } }] },
                      { text: "Oslo only" })
      reply = chat.ask("Go")

      expect(reply.content).to eq("Oslo only")
      expect(ran).to eq([[:weather, "Oslo"]])
      expect(reply.tool_calls.map(&:status)).to eq(%i[rejected rejected rejected rejected rejected succeeded])
      results = primary.requests.last.tool_results
      expect(results.map(&:error)).to eq([false] * 6) # OpenAI has no is_error: the text says it
      texts = results.map(&:content)
      expect(texts[0]).to include("must be a JSON object", "not JSON")
      expect(texts[1]).to include("$.city: missing required property")
      expect(texts[2]).to include("city: expected string, got integer 42")
      expect(texts[3]).to include('unit: "k" is not one of "c", "f"')
      expect(texts[4]).to include('There is no tool named "stock_price"', "weather, clock")
      expect(chat.messages.select { |m| m.role == "tool" }.map(&:is_error)).to eq([true] * 5 + [false])
    end

    it "sends a StandardError from execute as an error result (class and message), is_error on Anthropic" do
      boom = Class.new(LlmFailover::Tool) do
        tool_name "boom"
        def execute = raise(ArgumentError, "no such city")
      end
      chat = anthropic_chat.with_tool(boom)
      backup.enqueue({ tool_calls: [{ name: "boom", arguments: {} }] }, { text: "Sorry" })
      reply = chat.ask("Go")

      expect(reply.content).to eq("Sorry")
      call = reply.tool_calls.first
      expect([call.status, call.error.class_name, call.error.message]).to eq([:failed, "ArgumentError", "no such city"])
      result = backup.requests.last.tool_results.first
      expect([result.content, result.error]).to eq(["ArgumentError: no such city", true])
      expect(result.content).not_to include(".rb:")
    end

    it "lets anything but a StandardError go up, the call left running in the store" do
      stop = Class.new(Exception) # rubocop:disable Lint/InheritException -- what a crash looks like
      halt = Class.new(LlmFailover::Tool) do
        tool_name "halt"
        define_method(:execute) { raise stop, "killed" }
      end
      chat = LlmFailover.chat(model: "gpt-4o", provider: :openai).with_tool(halt)
      primary.enqueue({ tool_calls: [{ name: "halt", arguments: {} }] })
      expect { chat.ask("Go") }.to raise_error(stop)
      call = chat.messages[1].tool_calls.first
      expect(call.status).to eq(:running)
      expect(primary.request_count).to eq(1)

      # Resumed: not idempotent!, so it is not run again.
      expect { chat.complete }.to raise_error(LlmFailover::ToolInterruptedError) { |e| expect(e.tool_call.id).to eq(call.id) }
      expect(primary.request_count).to eq(1)
    end
  end

  it "reruns a call left running when its tool is idempotent!, then goes on" do
    count = 0
    flaky = Class.new(LlmFailover::Tool) do
      tool_name "lookup"
      idempotent!
      define_method(:execute) do
        count += 1
        raise NoMemoryError, "died" if count == 1

        "found"
      end
    end
    chat = LlmFailover.chat(model: "gpt-4o", provider: :openai).with_tool(flaky)
    primary.enqueue({ tool_calls: [{ name: "lookup", arguments: {} }] }, { text: "Found it" })
    expect { chat.ask("Go") }.to raise_error(NoMemoryError)
    reply = chat.complete
    expect(reply.content).to eq("Found it")
    expect(count).to eq(2)
    expect(reply.tool_calls.map(&:result)).to eq(["found"])
    expect(primary.requests.last.tool_results.map(&:content)).to eq(["found"])
  end

  it "never runs a call with a stored result again: complete after a failed turn resumes from the transcript" do
    chat = openai_chat
    primary.enqueue({ tool_calls: [{ name: "weather", arguments: { "city" => "Paris" } }] }, { error: :bad_request })
    expect { chat.ask("Paris?") }.to raise_error(LlmFailover::Error)
    expect(ran).to eq([[:weather, "Paris"]])
    primary.enqueue({ text: "21" })
    expect(chat.complete.content).to eq("21")
    expect(ran).to eq([])
    expect(primary.requests.last.tool_results.size).to eq(1)
  end

  it "resumes the loop of an idempotency_key's turn asked again, never taking a tool step for its answer" do
    chat = openai_chat
    primary.enqueue({ tool_calls: [{ name: "weather", arguments: { "city" => "Paris" } }] }, { error: :bad_request })
    expect { chat.ask("Paris?", idempotency_key: "job-1") }.to raise_error(LlmFailover::BadRequestError)
    primary.enqueue({ text: "21 in Paris" })
    reply = chat.ask("Paris?", idempotency_key: "job-1")
    expect(reply.content).to eq("21 in Paris")
    expect(ran).to eq([[:weather, "Paris"]]) # once, in the first ask
    expect(primary.request_count).to eq(3)
    expect(chat.ask("Paris?", idempotency_key: "job-1").content).to eq("21 in Paris") # stored: no request
    expect(primary.request_count).to eq(3)
  end

  it "stops at max_tool_rounds with ToolLoopError, the transcript intact, and complete goes on" do
    chat = openai_chat(max_tool_rounds: 2)
    primary.default = { tool_calls: [{ name: "clock", arguments: { "city" => "Oslo" } }] }
    expect { chat.ask("Loop") }.to raise_error(LlmFailover::ToolLoopError) { |e|
      expect(e.rounds).to eq(2)
      expect(e.tool_calls.map(&:status)).to eq(%i[succeeded succeeded])
    }
    expect(primary.request_count).to eq(2)
    expect(chat.messages.map(&:role)).to eq(%w[user assistant tool assistant tool])
    primary.default = { text: "Stopped looping" }
    expect(chat.complete.content).to eq("Stopped looping") # strict: every call had its result
    expect(LlmFailover.configuration.max_tool_rounds).to eq(10)
  end

  it "refuses to send a transcript with a call lacking its result, naming the call" do
    store = LlmFailover::MemoryStore.new
    store.add_user("Hi")
    message = store.start_assistant(model: "gpt-4o", provider: "openai")
    store.finish_assistant(message, content: "", model: "gpt-4o", provider: "openai", input_tokens: 1, output_tokens: 1,
                                    tool_calls: [LlmFailover::ToolCall.new(id: "call_orphan", name: "weather", arguments: "{}")])
    store.add_user("Hello?")
    chat = LlmFailover.chat(model: "gpt-4o", provider: :openai, store: store).with_tool(weather_tool(runs))
    expect { chat.complete }.to raise_error(LlmFailover::ToolTranscriptError) { |e| expect(e.call_id).to eq("call_orphan") }
    expect(primary.request_count).to eq(0)
    expect(ran).to eq([])
  end

  it "skips the response cache both ways for an ask with tools" do
    LlmFailover.configure { |c| c.cache = LlmFailover::MemoryCache.new }
    2.times do
      primary.enqueue({ tool_calls: [{ name: "weather", arguments: { "city" => "Paris" } }] }, { text: "21" })
      reply = LlmFailover.chat(model: "gpt-4o", provider: :openai).with_tool(weather_tool(runs)).ask("Paris?")
      expect(reply.cached?).to be(false)
    end
    expect(primary.request_count).to eq(4)
    expect(ran.size).to eq(2)
  end

  it "applies JSON mode to the final answer only" do
    chat = openai_chat.with_json_mode
    primary.enqueue({ tool_calls: [{ name: "weather", arguments: { "city" => "Paris" } }] }, { text: '{"temp": 21}' })
    reply = chat.ask("Paris as JSON")
    expect(reply.json).to eq({ "temp" => 21 })
    expect(reply.attempts.map(&:success)).to eq([true, true])
  end

  it "stops between turns on cancel!, never mid-execute: the tool finishes and its result is stored" do
    chat = nil
    stopper = Class.new(LlmFailover::Tool) do
      tool_name "stopper"
      define_method(:execute) do
        chat.cancel!
        "finished anyway"
      end
    end
    chat = LlmFailover.chat(model: "gpt-4o", provider: :openai).with_tool(stopper)
    primary.enqueue({ tool_calls: [{ name: "stopper", arguments: {} }] }, { text: "never sent" })
    reply = chat.ask("Go")
    expect(reply.cancelled?).to be(true)
    expect(reply.content).to eq("")
    expect(reply.tool_calls.map(&:result)).to eq(["finished anyway"])
    expect(primary.request_count).to eq(1)
    expect(chat.messages.map(&:role)).to eq(%w[user assistant tool])
  end

  it "stops between turns when the chat's cancel check says so (a Stop pressed in another process)" do
    stop = false
    long = Class.new(LlmFailover::Tool) do
      tool_name "long"
      define_method(:execute) do
        stop = true # pressed while the tool runs
        "done"
      end
    end
    chat = LlmFailover.chat(model: "gpt-4o", provider: :openai, cancel_check: -> { stop }).with_tool(long)
    primary.enqueue({ tool_calls: [{ name: "long", arguments: {} }] }, { text: "never sent" })
    reply = chat.ask("Go")
    expect(reply.cancelled?).to be(true)
    expect(primary.request_count).to eq(1)
    expect(chat.messages.map(&:role)).to eq(%w[user assistant tool])
  end

  it "restores scrubbed arguments before execute and scrubs results before they are sent" do
    LlmFailover.configure { |c| c.scrubber = LlmFailover::Scrubber.default(email: true) }
    seen = []
    echo = Class.new(LlmFailover::Tool) do
      tool_name "mail"
      param :to, type: :string
      define_method(:execute) do |to:|
        seen << to
        "sent to #{to}"
      end
    end
    chat = LlmFailover.chat(model: "gpt-4o", provider: :openai).with_tool(echo)
    primary.enqueue({ text: "ok" })
    chat.ask("Write to jane.doe@example.com")
    placeholder = primary.requests.last.json["messages"].last["content"][/\S+\z/]
    expect(placeholder).not_to include("example.com")

    primary.enqueue({ tool_calls: [{ name: "mail", arguments: { "to" => placeholder } }] }, { text: "done" })
    chat.ask("Mail jane.doe@example.com again")
    expect(seen.last).to eq("jane.doe@example.com")
    expect(chat.messages.last(2).first.content).to eq("sent to jane.doe@example.com")
    sent = primary.requests.last.tool_results.first.content
    expect(sent).not_to include("jane.doe@example.com")
  end

  it "checks what it is given" do
    chat = LlmFailover.chat(model: "gpt-4o", provider: :openai)
    expect { chat.with_tools(weather_tool(runs), concurrency: :fibers) }.to raise_error(ArgumentError, /concurrency/)
    expect { chat.with_tool_choice(42) }.to raise_error(ArgumentError, /tool choice/)
    chat.with_tool(weather_tool(runs)).with_tool_choice("clock")
    expect { chat.ask("x") }.to raise_error(ArgumentError, /not one of the chat's tools/)
    expect(chat.with_tools(clock_tool(runs), replace: true).tools.map(&:name)).to eq(["clock"])
    expect { LlmFailover.chat(model: "gpt-4o", provider: :openai, store: SpecListStore.new).with_tool(weather_tool(runs)) }
      .to raise_error(ArgumentError, /cannot keep tool calls/)
    expect { LlmFailover.configure { |c| c.max_tool_rounds = 0 } }.to raise_error(LlmFailover::ConfigurationError)
  end

  it "sends the tool choice in each protocol's words" do
    primary.enqueue({ tool_calls: [{ name: "clock", arguments: { "city" => "Oslo" } }] }, { text: "noon" })
    openai_chat.with_tool_choice("clock").ask("time?")
    expect(primary.requests.first.json["tool_choice"]).to eq({ "type" => "function", "function" => { "name" => "clock" } })
    # Forced on the first turn only: the next may answer.
    expect(primary.requests.last.json["tool_choice"]).to eq("auto")
    backup.enqueue({ text: "fine" })
    anthropic_chat.with_tool_choice(:required).ask("x")
    expect(backup.requests.last.json["tool_choice"]).to eq({ "type" => "any" })
  end

  describe "a schema with tools" do
    let(:schema) do
      { type: "object", properties: { temp: { type: "integer" } }, required: ["temp"], additionalProperties: false }
    end

    it "is refused before anything is stored or sent when any target of the chat is Anthropic" do
      [anthropic_chat, openai_chat].each do |chat| # the primary; the backup only
        chat.with_schema(schema)
        expect { chat.ask("Paris?") }.to raise_error(ArgumentError, /schema .*and tools .*Anthropic/)
        expect { chat.complete }.to raise_error(ArgumentError, /cannot go in one request to Anthropic/)
        expect(chat.messages).to be_empty
      end
      expect([primary.request_count, backup.request_count]).to eq([0, 0])
    end

    it "goes to an OpenAI-only chat, and json: false lifts it" do
      chat = LlmFailover.chat(model: "gpt-4o", provider: :openai).with_tools(weather_tool(runs)).with_schema(schema)
      primary.enqueue({ text: '{"temp": 21}' })
      expect(chat.ask("Paris?").json).to eq({ "temp" => 21 })
      backup.enqueue({ text: "21" })
      expect(anthropic_chat.with_schema(schema).ask("Paris?", json: false).content).to eq("21")
    end
  end

  describe "tools removed after tool calls were stored" do
    [[:openai, :primary], [:anthropic, :backup]].each do |api, server|
      it "sends the earlier calls and results as text on the #{api} protocol" do
        fp = send(server)
        chat = api == :openai ? openai_chat : anthropic_chat
        fp.enqueue({ tool_calls: [{ name: "weather", arguments: { "city" => "Paris" } }] }, { text: "21 in Paris" })
        chat.ask("Paris?")
        chat.with_tools(replace: true)
        fp.enqueue({ text: "Yes, mild" })

        expect(chat.ask("Mild?").content).to eq("Yes, mild")
        sent = fp.requests.last
        expect([sent.tool_calls, sent.tool_results, sent.json["tools"]]).to eq([[], [], nil])
        texts = sent.json["messages"].map { |m| [m["role"], m["content"].is_a?(Array) ? m["content"].map { |b| b["text"] }.join : m["content"]] }
        expect(texts).to eq([["user", "Paris?"],
                             ["assistant", '[earlier tool call weather({"city":"Paris"}) returned: ' \
                                           '{"city":"Paris","temp":21,"unit":"c"}]'],
                             ["assistant", "21 in Paris"], ["user", "Mild?"]])
        # The store keeps the calls as they were.
        expect(chat.messages.map(&:role)).to eq(%w[user assistant tool assistant user assistant])
      end
    end
  end
end
