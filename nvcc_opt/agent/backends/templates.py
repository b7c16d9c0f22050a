"""A ChatML chat template that shows tools, for models whose own template silently drops them.

Hermes style: the tool schemas go into the system turn inside <tools></tools>, the model calls a
tool by writing <tool_call>{"name": ..., "arguments": {...}}</tool_call> (the form
`nvcc_opt.agent.calls` parses), and tool results come back in a user turn inside
<tool_response></tool_response>. The special tokens are ChatML's (<|im_start|>, <|im_end|>), which
SmolLM2, Qwen and most small instruct models share. All text is written by expressions, because
transformers renders templates with trim_blocks and lstrip_blocks on.

HERMES_TOOLS_TRAINING_TEMPLATE renders the same text with `{% generation %}` markers around what
the assistant writes, for training with an assistant-only loss; student checkpoints carry it.
"""

from __future__ import annotations

TEMPLATE_NAME = "nvcc-opt-hermes"

_HERMES_SOURCE = """\
{%- if messages and messages[0].role == 'system' -%}
  {%- set system_text = messages[0].content -%}
  {%- set turns = messages[1:] -%}
{%- else -%}
  {%- set system_text = 'You are a helpful assistant.' -%}
  {%- set turns = messages -%}
{%- endif -%}
{{- '<|im_start|>system\\n' + system_text -}}
{%- if tools -%}
  {{- '\\n\\n# Tools\\n\\nThese functions are available. '
      + 'Their JSON schemas are listed inside <tools></tools>:\\n<tools>' -}}
  {%- for tool in tools -%}
    {{- '\\n' + ((tool.function if tool.function is defined else tool) | tojson) -}}
  {%- endfor -%}
  {{- '\\n</tools>\\n\\nTo call a function, write its name and arguments as one JSON object '
      + 'between the tags <tool_call> and </tool_call>, like this:\\n<tool_call>\\n'
      + '{"name": "<function name>", "arguments": {"<argument name>": <value>}}\\n</tool_call>' -}}
{%- endif -%}
{{- '<|im_end|>\\n' -}}
{%- for message in turns -%}
  {%- if message.role == 'tool' -%}
    {%- if loop.first or loop.previtem.role != 'tool' -%}{{- '<|im_start|>user' -}}{%- endif -%}
    {{- '\\n<tool_response>\\n' + message.content + '\\n</tool_response>' -}}
    {%- if loop.last or loop.nextitem.role != 'tool' -%}{{- '<|im_end|>\\n' -}}{%- endif -%}
  {%- elif message.role == 'assistant' -%}
    {{- '<|im_start|>assistant\\n' -}}
    @GENERATION@{{- message.content or '' -}}
    {%- for call in (message.tool_calls or []) -%}
      {%- set function = call.function if call.function is defined else call -%}
      {%- set arguments = function.arguments -%}
      {%- if arguments is not string -%}{%- set arguments = arguments | tojson -%}{%- endif -%}
      {{- '\\n<tool_call>\\n{"name": "' + function.name + '", "arguments": ' + arguments
          + '}\\n</tool_call>' -}}
    {%- endfor -%}
    {{- '<|im_end|>' -}}@ENDGENERATION@
    {{- '\\n' -}}
  {%- else -%}
    {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' -}}
  {%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}
"""

# What a model sees: the markers render nothing.
HERMES_TOOLS_TEMPLATE = _HERMES_SOURCE.replace("@GENERATION@", "").replace("@ENDGENERATION@", "")

# The same text with each assistant turn's output (content, tool calls and its closing <|im_end|>,
# not the "<|im_start|>assistant" header) inside transformers' {% generation %} block, so trl's
# SFTTrainer(assistant_only_loss=True) trains on exactly what the model writes. Checkpoints are
# saved with it; at inference it renders the same bytes as HERMES_TOOLS_TEMPLATE.
HERMES_TOOLS_TRAINING_TEMPLATE = _HERMES_SOURCE.replace(
    "@GENERATION@", "{%- generation -%}"
).replace("@ENDGENERATION@", "{%- endgeneration -%}")
